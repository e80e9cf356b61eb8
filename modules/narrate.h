// Narration helpers shared by the module walkthroughs: headings, prose, and SHOW / RUN / SHOW_ERROR,
// which print a step's code (after ">>>") and then its value, its effect or the error it throws.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include <tinytorch/tinytorch.h>

namespace narrate {

// A section title between two rules of '='.
inline void heading(const std::string& title) {
  std::cout << "\n" << std::string(78, '=') << "\n" << title << "\n" << std::string(78, '=') << "\n";
}

// A paragraph of prose, after a blank line.
inline void say(const std::string& text) { std::cout << "\n" << text << "\n"; }

// `text` with every line indented by four spaces (a final newline does not start a new line).
inline std::string indent(const std::string& text) {
  std::string out = "    ";
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) out += "    ";
  }
  return out;
}

// Prints `code` after ">>>" and `value` under it, indented. Numbers get std::cout's current
// precision and bools print as true/false.
template <typename T>
void show(const char* code, const T& value) {
  std::ostringstream os;
  os.precision(std::cout.precision());
  os << std::boolalpha << value;
  std::cout << ">>> " << code << "\n" << indent(os.str()) << "\n";
}

// Prints `code` after ">>>", runs `f` and prints the tt::Error it throws (the library's way of
// saying no), or says that none came.
template <typename F>
void show_error(const char* code, F f) {
  std::cout << ">>> " << code << "\n";
  try {
    f();
    std::cout << "    (no error?)\n";
  } catch (const tt::Error& e) {
    std::cout << "    tt::Error: " << e.what() << "\n";
  }
}

// One number through a printf format: fmt("%.2f", 3.14159) is "3.14".
inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The best of `reps` wall-clock timings of f(), in milliseconds: the least disturbed run, the
// fairest single number on a shared machine.
template <typename F>
double best_ms(F f, int reps = 5) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// Runs a walkthrough's body. An error the narration did not expect ends the walkthrough with its
// message, not an abort.
inline int run_guarded(int (*body)()) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << "\nwalkthrough stopped by an unexpected error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace narrate

// SHOW(expr) prints the expression and its value. RUN(stmt) prints the statement and runs it in
// the enclosing scope, so what it declares stays visible to later steps. SHOW_ERROR(expr) prints
// the expression and the tt::Error it throws.
#define SHOW(...) narrate::show(#__VA_ARGS__, (__VA_ARGS__))
#define RUN(...)                                \
  std::cout << ">>> " << #__VA_ARGS__ << ";\n"; \
  __VA_ARGS__
#define SHOW_ERROR(...) narrate::show_error(#__VA_ARGS__, [&] { (void)(__VA_ARGS__); })
