// Narration helpers shared by the module walkthroughs: headings, prose, and SHOW / RUN / SHOW_ERROR,
// which print a step's code (after ">>>") and then its value, its effect or the error it throws;
// and the step runner, run_walkthrough, which runs a walkthrough's numbered steps, all of them in
// order or only those named with --step.
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

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
inline int run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << "\nwalkthrough stopped by an unexpected error: " << e.what() << "\n";
    return 1;
  }
}

// Runs f() with std::cout silenced (std::printf is not) and its formatting restored afterwards,
// and returns what f returns. A step that needs what an earlier step built gets it this way: it
// runs the earlier step's code again, without the narration, so that it also works alone.
template <typename F>
auto quietly(F f) -> decltype(f()) {
  struct NullBuffer : std::streambuf {
    int overflow(int c) override { return traits_type::not_eof(c); }
  };
  struct Restore {
    std::streambuf* buffer;
    std::ios format;
    ~Restore() {
      std::cout.rdbuf(buffer);
      std::cout.copyfmt(format);
    }
  };
  static NullBuffer null_buffer;
  Restore restore{std::cout.rdbuf(&null_buffer), std::ios(nullptr)};
  restore.format.copyfmt(std::cout);
  return f();
}

// Puts the default random stream where a full run has it when a step begins: seeded with `seed`,
// then `drawn` numbers taken (a random tensor takes one per element). A step that prints what it
// draws from a stream an earlier step began calls it first, so that it prints the same numbers
// when it runs alone.
inline void resume_random_stream(uint64_t seed, uint64_t drawn) {
  tt::manual_seed(seed);
  tt::default_generator().take(drawn);
}

// --- the step runner -----------------------------------------------------------------------------

// One numbered section of a walkthrough (one numbered heading of its README): its label ("3", or
// "A2" in module 02), its title, and the function that runs it. The runner prints the heading
// "label. title" and calls the function, which must work alone: what it needs from earlier steps
// it builds again (often with quietly).
struct Step {
  std::string label;
  std::string title;
  std::function<void()> run;
};

// A walkthrough as run_walkthrough runs it.
struct Walkthrough {
  std::string name;                         // "walkthrough_01": the usage line and errors name it
  std::function<void()> begin;              // before the first step of every run: the module's title
  std::vector<Step> steps;                  // in order
  std::function<void(double seconds)> end;  // after the last step, only when every step ran
  // The walkthrough's own arguments, if it has any besides --step, --list and --help:
  std::string usage;       // appended to the usage line, e.g. "[DIR]"
  std::string usage_help;  // their lines in --help, each starting with two spaces
  // Called with each argument the runner does not know (argv[i]). Returns how many arguments it
  // used (1, or 2 for a flag with a value), 0 when the argument is not one of its own, or -1 when
  // it is but is wrong (after printing why to std::cerr).
  std::function<int(int argc, char** argv, int i)> parse;
};

// The steps named by a --step value: labels separated by commas ("3", "2,5", "a2"), matched
// ignoring case. Adds their indices to `chosen`; returns the first label that names no step, or
// "" when all do.
inline std::string choose_steps(const Walkthrough& w, const std::string& value, std::vector<bool>& chosen) {
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::stringstream labels(value);
  for (std::string label; std::getline(labels, label, ',');) {
    label.erase(0, label.find_first_not_of(' '));
    label.erase(label.find_last_not_of(' ') + 1);
    size_t i = 0;
    while (i < w.steps.size() && lower(w.steps[i].label) != lower(label)) ++i;
    if (i == w.steps.size()) return label.empty() ? "(empty)" : label;
    chosen[i] = true;
  }
  return "";
}

inline void print_usage(const Walkthrough& w, std::ostream& os) {
  os << "usage: " << w.name << " [--step N[,N...]]... [--list]" << (w.usage.empty() ? "" : " ") << w.usage
     << "\n"
        "  (no flag)   run every step, in order\n"
        "  --step N    run step N alone (N as --list shows it); repeat the flag or give a comma\n"
        "              list (--step 2,5) to run several, in the walkthrough's order\n"
        "  --list      print the steps and exit\n"
        "  --help      this text\n"
     << w.usage_help;
}

// main() of a walkthrough: parses the arguments, then runs begin, every step (or the chosen ones)
// under its heading, and end after a full run. An unexpected error ends the run with its message
// and exit code 1 (run_guarded); a wrong argument or an unknown step gets exit code 2. Each step
// starts with std::cout formatted as begin left it.
inline int run_walkthrough(int argc, char** argv, const Walkthrough& w) {
  // First, before any thread starts: OpenBLAS's proper kernels, idle OpenMP threads that sleep
  // rather than spin, and on a busy machine only the idle cores, so that a walkthrough there is not
  // many times slower than it should be and its timings mean something (Note [threading policy] in
  // tinytorch/backend/threads.cpp). The timings it prints state the thread count.
  tt::relaunch_with_runtime_env(argv);
  // The runtime's first-use warnings (a BLAS kernel set below the CPU, a busy machine) come at the
  // first parallel op, which could fall mid-line or mid-table; asking for the thread count prints
  // them now, on lines of their own, before anything else.
  tt::get_num_threads();
  std::vector<bool> chosen(w.steps.size(), false);
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      print_usage(w, std::cout);
      return 0;
    }
    if (a == "--list") {
      list = true;
      continue;
    }
    if (a == "--step" || a.rfind("--step=", 0) == 0) {
      std::string value;
      if (a != "--step") {
        value = a.substr(7);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        std::cerr << w.name << ": --step wants a step, e.g. --step " << w.steps.front().label << "\n";
        print_usage(w, std::cerr);
        return 2;
      }
      const std::string unknown = choose_steps(w, value, chosen);
      if (!unknown.empty()) {
        std::cerr << w.name << ": there is no step " << unknown << "; the steps are";
        for (const Step& s : w.steps) std::cerr << " " << s.label;
        std::cerr << " (--list names them)\n";
        return 2;
      }
      continue;
    }
    const int used = w.parse ? w.parse(argc, argv, i) : 0;
    if (used > 0) {
      i += used - 1;
      continue;
    }
    if (used == 0) std::cerr << w.name << ": unknown argument '" << a << "'\n";
    print_usage(w, std::cerr);
    return 2;
  }
  if (list) {
    size_t width = 0;
    for (const Step& s : w.steps) width = std::max(width, s.label.size());
    for (const Step& s : w.steps)
      std::cout << "  " << std::setw(int(width)) << s.label << ". " << s.title << "\n";
    return 0;
  }
  const bool all = std::none_of(chosen.begin(), chosen.end(), [](bool c) { return c; });
  return run_guarded([&] {
    const auto t0 = std::chrono::steady_clock::now();
    if (w.begin) w.begin();
    std::ios format(nullptr);
    format.copyfmt(std::cout);
    for (size_t i = 0; i < w.steps.size(); ++i) {
      if (!all && !chosen[i]) continue;
      std::cout.copyfmt(format);
      heading(w.steps[i].label + ". " + w.steps[i].title);
      w.steps[i].run();
    }
    std::cout.copyfmt(format);
    if (all && w.end) w.end(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
  });
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
