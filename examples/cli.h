// The examples' command line: a tiny parser for flags that each take one value (--steps 100),
// and switches that take none (--qk-norm), bound to the fields of an options struct, with a
// generated --help (usage line, description, one line per flag with its default), and run_main,
// which turns an error during the run into its message and exit status 2 (or, in a data-parallel
// run, ends every rank with it).
//
//   examples::Cli cli("train_mlp", "Trains an MLP on a built-in dataset ...\n");
//   cli.choice("--data", args.data, {"spirals", "digits"}, "the dataset");
//   cli.option("--epochs", args.epochs, "N", "passes over the training set");
//   cli.flag("--verbose", args.verbose, "print more");   // a switch: present = true
//   cli.parse(argc, argv);   // -h/--help: prints the help, exits 0; a bad command line: exits 2
//   if (args.epochs < 1) cli.fail("--epochs must be positive");   // the message, the usage, exit 2
//   return examples::run_main("train_mlp", [&] { return train(args); });
//
// A bad command line (an unknown flag, a flag without its value, a value that is not a number or
// not one of the choices) prints "<program>: <what is wrong>" on stderr and the help on stdout,
// and exits with status 2. Numbers must be whole: "--steps 10x" is refused.
//
// Where an example trains, the same flag in every example:
//
//   std::string device = "cpu";
//   cli.device_option(device);                  // --device cpu|cuda|auto
//   cli.parse(argc, argv);
//   tt::Device d = cli.device(device);          // cpu; cuda:0; auto: cuda:0 when a GPU is usable, else cpu
//
// --device cuda where it cannot run (a build without the CUDA backend, or no visible GPU) is a bad
// command line: the reason on stderr, exit status 2, before any work. device_label(d) is what the
// progress bar shows: "cpu", or "cuda:0 (NVIDIA H100 80GB HBM3)".
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <tinytorch/core/device.h>
#include <tinytorch/distributed/distributed.h>

namespace examples {

class Cli {
 public:
  // description: the text --help prints after the usage line (ending with a newline).
  Cli(std::string program, std::string description)
      : program_(std::move(program)), description_(std::move(description)) {}

  // --flag METAVAR, stored into `value`, whose current value is the default --help shows (an empty
  // string shows none: say it in `help`; one with a space is quoted).
  Cli& option(const std::string& flag, std::string& value, const std::string& metavar, const std::string& help) {
    const std::string shown = value.find(' ') == std::string::npos ? value : "\"" + value + "\"";
    return add(flag, metavar, help, shown, [&value](const std::string& v) {
      value = v;
      return true;
    });
  }
  Cli& option(const std::string& flag, int& value, const std::string& metavar, const std::string& help) {
    return add(flag, metavar, help, std::to_string(value),
               [&value](const std::string& v) { return whole(v, [&](size_t* pos) { value = std::stoi(v, pos); }); });
  }
  Cli& option(const std::string& flag, int64_t& value, const std::string& metavar, const std::string& help) {
    return add(flag, metavar, help, std::to_string(value),
               [&value](const std::string& v) { return whole(v, [&](size_t* pos) { value = std::stoll(v, pos); }); });
  }
  Cli& option(const std::string& flag, uint64_t& value, const std::string& metavar, const std::string& help) {
    return add(flag, metavar, help, std::to_string(value),
               [&value](const std::string& v) { return whole(v, [&](size_t* pos) { value = std::stoull(v, pos); }); });
  }
  Cli& option(const std::string& flag, double& value, const std::string& metavar, const std::string& help) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", value);
    return add(flag, metavar, help, shown,
               [&value](const std::string& v) { return whole(v, [&](size_t* pos) { value = std::stod(v, pos); }); });
  }
  // --flag with one of `choices` (shown as the metavar "a|b|c").
  Cli& choice(const std::string& flag, std::string& value, const std::vector<std::string>& choices,
              const std::string& help) {
    std::string metavar;
    for (const std::string& c : choices) metavar += (metavar.empty() ? "" : "|") + c;
    auto set = [&value, choices](const std::string& v) {
      for (const std::string& c : choices) {
        if (v == c) {
          value = v;
          return true;
        }
      }
      return false;
    };
    return add(flag, metavar, help, value, set, /*choice=*/true);
  }

  // --flag alone (no value): sets `value` to true.
  Cli& flag(const std::string& flag, bool& value, const std::string& help) {
    add(flag, "", help, "", [&value](const std::string&) {
      value = true;
      return true;
    });
    options_.back().is_switch = true;
    return *this;
  }

  // --device cpu|cuda|auto, bound to `value` (its default is what the program set it to).
  Cli& device_option(std::string& value, const std::string& help = "where the model and its data live") {
    return choice("--device", value, {"cpu", "cuda", "auto"}, help + "; auto: a GPU if one is usable");
  }

  // The device a --device value names: "cpu" the CPU; "cuda" GPU `index` (a data-parallel rank
  // passes its local rank), or a clear refusal (exit 2) where no GPU can be used; "auto" GPU
  // `index` when tt::cuda::is_available(), else the CPU.
  tt::Device device(const std::string& value, int index = 0) const {
    if (value == "cpu") return tt::Device(tt::kCPU);
    if (value != "cuda" && value != "auto") fail("--device expects one of cpu|cuda|auto, got '" + value + "'");
    if (tt::cuda::is_available()) return tt::Device(tt::kCUDA, index);
    if (value == "auto") return tt::Device(tt::kCPU);
#ifdef TINYTORCH_HAS_CUDA
    fail("--device cuda: no GPU is visible (the driver reports none: check nvidia-smi and CUDA_VISIBLE_DEVICES); "
         "use --device cpu or auto");
#else
    fail("--device cuda: this build has no CUDA backend (rebuild with nvcc installed, -DTINYTORCH_CUDA=ON); "
         "use --device cpu or auto");
#endif
  }

  // Reads argv into the bound values; exits on -h/--help (status 0) and on a bad command line (2).
  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--help" || flag == "-h") usage(0);
      const Option* o = find(flag);
      if (o == nullptr) fail("unknown flag '" + flag + "'");
      if (o->is_switch) {
        o->set("");
        continue;
      }
      if (i + 1 >= argc) fail(flag + " expects a value (" + o->metavar + ")");
      const std::string value = argv[++i];
      if (!o->set(value)) {
        fail(flag + (o->choice ? " expects one of " + o->metavar : std::string(" expects a number")) + ", got '" +
             value + "'");
      }
    }
  }

  // "<program>: <message>" on stderr, the help on stdout, exit status 2: for the checks a program
  // makes after parse() (sizes that must be positive, ...).
  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\n", program_.c_str(), message.c_str());
    usage(2);
  }

  // Prints the help on stdout and exits with `status`.
  [[noreturn]] void usage(int status) const {
    std::printf("%s", help().c_str());
    std::exit(status);
  }

  std::string help() const {
    // The usage line, wrapped under its first flag.
    const std::string head = "usage: " + program_ + " ";
    std::string text = head, line = head;
    for (const Option& o : options_) {
      const std::string item = "[" + o.flag + (o.is_switch ? "" : " " + o.metavar) + "]";
      if (line.size() > head.size() && line.size() + item.size() > kWidth) {
        text += "\n" + std::string(head.size(), ' ');
        line = std::string(head.size(), ' ');
      } else if (line.size() > head.size()) {
        text += " ";
        line += " ";
      }
      text += item;
      line += item;
    }
    text += "\n" + description_ + "\noptions:\n";
    // One line per flag, "  --flag METAVAR  help (default D)", the help column aligned.
    const std::string help_flag = "-h, --help";
    size_t column = help_flag.size();
    for (const Option& o : options_) column = std::max(column, o.flag.size() + 1 + o.metavar.size());
    auto name_of = [](const Option& o) { return o.is_switch ? o.flag : o.flag + " " + o.metavar; };
    auto row = [&](const std::string& name, const std::string& what) {
      text += "  " + name + std::string(column - name.size() + 2, ' ') + what + "\n";
    };
    for (const Option& o : options_)
      row(name_of(o), o.default_text.empty() ? o.help : o.help + " (default " + o.default_text + ")");
    row(help_flag, "this help");
    return text;
  }

 private:
  static constexpr size_t kWidth = 100;

  struct Option {
    std::string flag, metavar, help, default_text;
    std::function<bool(const std::string&)> set;  // false: not a valid value
    bool choice;
    bool is_switch = false;  // takes no value (flag())
  };

  Cli& add(const std::string& flag, const std::string& metavar, const std::string& help,
           const std::string& default_text, std::function<bool(const std::string&)> set, bool choice = false) {
    options_.push_back({flag, metavar, help, default_text, std::move(set), choice});
    return *this;
  }

  // Runs parse_with(&pos) (std::stoll and kin); true when it read the whole string.
  template <class Parse>
  static bool whole(const std::string& v, Parse parse_with) {
    try {
      size_t pos = 0;
      parse_with(&pos);
      return pos == v.size();
    } catch (const std::exception&) {  // not a number, or out of range
      return false;
    }
  }

  const Option* find(const std::string& flag) const {
    for (const Option& o : options_)
      if (o.flag == flag) return &o;
    return nullptr;
  }

  std::string program_, description_;
  std::vector<Option> options_;
};

// How the progress bar names a device: "cpu", or "cuda:0 (NVIDIA H100 80GB HBM3)" (the GPU's name:
// tt::cuda::device_description up to its first comma).
inline std::string device_label(const tt::Device& device) {
  if (!device.is_cuda()) return device.str();
  const std::string description = tt::cuda::device_description(device.index);
  return device.str() + " (" + description.substr(0, description.find(',')) + ")";
}

// Runs body() (the training, returning the exit status) and turns an exception (a tt::Error: an
// unwritable path, an unreadable file) into "<program>: <message>" on stderr and exit status 2.
// In a data-parallel run of several processes (tt::distributed) the other ranks would wait for this
// one forever in their next collective, so the error ends the whole job instead:
// "rank R: <program>: <message>" (tt::distributed::abort).
template <class Body>
int run_main(const char* program, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    const std::string message = std::string(program) + ": " + e.what();
    if (tt::distributed::get_world_size() > 1) tt::distributed::abort(message);
    std::fprintf(stderr, "%s\n", message.c_str());
    return 2;
  }
}

}  // namespace examples
