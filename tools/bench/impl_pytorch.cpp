// The pytorch impl: PyTorch 2 on the CPU, written as its users write it, in
// tools/bench_pytorch_cpu.py. tt_bench runs that script as ONE child process per run, after its
// in-process rounds (Note [separate process] in harness.cpp), and reads its lines back:
//   # bench_pytorch_cpu: torch=2.x python=... threads=...      what ran
//   workload=NAME impl=pytorch ms_min=X ms_med=Y [key=value ...] check=S ...
//   workload=NAME impl=pytorch skipped=REASON                   REASON runs to the end of the line
// This file holds no Python and no torch: it builds the command line, reads text and decides what
// a missing or old torch means. Asked for by name (--impls ...,pytorch), every selected workload
// gets a row, skipped with the reason when it could not run. Otherwise the impl is on only when
// the script reports torch >= 2 (then, again, a row for every workload) and leaves no rows when
// it does not.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

namespace ttbench {

namespace {

constexpr int kMinTorchMajor = 2;  // the anchor is PyTorch 2; 1.x is the LibTorch impl's job

// A shell word: s in single quotes, its own single quotes written '\''.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The value of ` key=` in a line, up to the next space ("" when absent).
std::string field(const std::string& line, const std::string& key) {
  const std::string needle = key + "=";
  size_t at = 0;
  if (line.compare(0, needle.size(), needle) != 0) {
    at = line.find(" " + needle);
    if (at == std::string::npos) return "";
    ++at;
  }
  const size_t start = at + needle.size(), end = line.find(' ', start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Parses one `workload=` line into `row`; false when it is not one of ours.
bool parse_row(const std::string& line, ExternalRow& row) {
  row = ExternalRow();
  row.workload = field(line, "workload");
  if (row.workload.empty() || field(line, "impl") != "pytorch") return false;
  const size_t skipped = line.find(" skipped=");
  if (skipped != std::string::npos) {
    row.skipped = line.substr(skipped + 9);
    if (row.skipped.empty()) row.skipped = "(no reason given)";
    return true;
  }
  const std::string ms_min = field(line, "ms_min"), ms_med = field(line, "ms_med"), check = field(line, "check");
  char* end = nullptr;
  row.ms_min = std::strtod(ms_min.c_str(), &end);
  if (ms_min.empty() || *end != '\0') return false;
  row.ms_med = std::strtod(ms_med.c_str(), &end);
  if (ms_med.empty() || *end != '\0') return false;
  if (!check.empty()) {
    row.check = std::strtod(check.c_str(), &end);
    row.has_check = *end == '\0';
  }
  // Every other key=value goes on the line tt_bench prints (rounds, iters, cores_busy, torch, ...).
  size_t pos = 0;
  while (pos < line.size()) {
    size_t next = line.find(' ', pos);
    if (next == std::string::npos) next = line.size();
    const std::string word = line.substr(pos, next - pos), key = word.substr(0, word.find('='));
    if (!word.empty() && key != "workload" && key != "impl" && key != "ms_min" && key != "ms_med" && key != "check")
      row.fields += " " + word;
    pos = next + 1;
  }
  return true;
}

// The torch major version of a `# bench_pytorch_cpu: torch=V ...` line; -1 for torch=none.
int torch_major(const std::string& header) {
  const std::string v = field(header, "torch");
  return v.empty() || v[0] < '0' || v[0] > '9' ? -1 : std::atoi(v.c_str());
}

// The directory of the running tt_bench binary ("" when /proc does not say).
std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

// Runs `cmd` (stdout and stderr together) and hands each line to `line`; returns its exit status
// (127: the shell found no such program; -1: it could not be started).
template <typename OnLine>
int run_lines(const std::string& cmd, OnLine line) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string pending;
  char chunk[4096];
  while (std::fgets(chunk, sizeof chunk, pipe) != nullptr) {
    pending += chunk;
    if (pending.back() != '\n') continue;
    pending.pop_back();
    line(pending);
    pending.clear();
  }
  if (!pending.empty()) line(pending);
  const int status = pclose(pipe);
  return status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string run_pytorch(const PytorchOptions& o, const std::vector<std::string>& workloads,
                        const std::function<void(const ExternalRow&)>& on_row) {
  const std::string who = o.script + " (" + o.python + ")";
  std::vector<bool> reported(workloads.size(), false);
  // On when asked for by name, or once the script's first line shows torch >= 2 (it prints that
  // line before any row). When on, every workload gets a row.
  bool on = o.required;
  // Rows for every workload still without one.
  auto skip_rest = [&](const std::string& reason) {
    if (!on) return;
    for (size_t i = 0; i < workloads.size(); ++i) {
      if (reported[i]) continue;
      ExternalRow row;
      row.workload = workloads[i];
      row.skipped = reason;
      on_row(row);
    }
  };
  if (workloads.empty()) return "no workloads";
  if (access(o.script.c_str(), R_OK) != 0) {
    skip_rest("script not found: " + o.script);
    return "not run: " + o.script + " not found (--pytorch-script PATH)";
  }

  std::string names;
  for (const std::string& w : workloads) names += (names.empty() ? "" : "|") + w;
  std::string cmd = shell_quote(o.python) + " " + shell_quote(o.script) + " --threads " + std::to_string(o.threads) +
                    " --warmup " + std::to_string(o.warmup) + " --min-torch " + std::to_string(kMinTorchMajor) +
                    " --filter " + shell_quote("^(" + names + ")$");
  if (o.rounds > 0) cmd += " --rounds " + std::to_string(o.rounds);

  bool seen_header = false;
  int timed = 0;
  std::string header, last_other;
  const int status = run_lines(cmd, [&](const std::string& line) {
    const std::string tag = "# bench_pytorch_cpu: ";
    ExternalRow row;
    if (line.compare(0, tag.size(), tag) == 0) {
      seen_header = true;
      header = line.substr(tag.size());
      on = on || torch_major(header) >= kMinTorchMajor;
      if (on) std::printf("# pytorch: %s\n", header.c_str());
    } else if (parse_row(line, row)) {
      for (size_t i = 0; i < workloads.size(); ++i)
        if (workloads[i] == row.workload) reported[i] = true;
      if (!on) return;
      timed += row.skipped.empty() ? 1 : 0;
      on_row(row);
    } else if (!line.empty()) {
      last_other = line;
      if (on) std::printf("# pytorch: %s\n", line.c_str());  // warnings, tracebacks
    }
  });

  if (status != 0) {
    const std::string why = status == 127 && !seen_header ? o.python + " not found (set TT_BENCH_PYTHON)"
                                                          : who + " exited with status " + std::to_string(status) +
                                                                (last_other.empty() ? "" : ": " + last_other);
    skip_rest(why);
    return "not run: " + why;
  }
  skip_rest("not printed by " + o.script);
  if (!seen_header) return "not run: " + who + " printed no `# bench_pytorch_cpu:` line";
  if (!on)
    return "off: " + who + " has torch=" + field(header, "torch") + ", the pytorch rows need torch >= " +
           std::to_string(kMinTorchMajor) + " (`--impls ...,pytorch` prints them as skipped)";
  if (timed == 0) return who + " timed nothing (see the skipped= rows)";
  return who + ", one separate run after the rows above";
}

std::vector<std::string> list_pytorch(const PytorchOptions& o) {
  std::vector<std::string> names;
  if (access(o.script.c_str(), R_OK) != 0) return names;
  run_lines(shell_quote(o.python) + " " + shell_quote(o.script) + " --list", [&](const std::string& line) {
    const std::string name = line.substr(0, line.find(' '));
    if (!name.empty() && name[0] != '#') names.push_back(name);
  });
  return names;
}

}  // namespace

ExternalImpl make_pytorch_impl(const PytorchOptions& options) {
  PytorchOptions o = options;
  if (o.script.empty()) {
    // Next to the binary first (a copied tt_bench with its script), then the source tree.
    const std::string beside = exe_dir() + "/bench_pytorch_cpu.py";
#ifdef TT_BENCH_PYTORCH_CPU_SCRIPT
    o.script = access(beside.c_str(), R_OK) == 0 ? beside : std::string(TT_BENCH_PYTORCH_CPU_SCRIPT);
#else
    o.script = beside;
#endif
  }
  ExternalImpl impl;
  impl.name = "pytorch";
  impl.list = [o] { return list_pytorch(o); };
  impl.run = [o](const std::vector<std::string>& workloads, const std::function<void(const ExternalRow&)>& row) {
    return run_pytorch(o, workloads, row);
  };
  return impl;
}

}  // namespace ttbench
