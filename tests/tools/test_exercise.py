#!/usr/bin/env python3
"""Tests of tools/exercise.py (exercise mode and `tt status`) on a small fixture tree in a temp dir.

Run by CTest (label `tools`): test_exercise.py PATH/TO/tools/exercise.py. Standard library only.
"""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

SPEC = importlib.util.spec_from_file_location("exercise", sys.argv.pop(1) if len(sys.argv) > 1 else
                                              os.path.join(os.path.dirname(__file__), "../../tools/exercise.py"))
ex = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ex)

# Line numbers below matter: the stubs name them.
LAYERS = """\
// A fixture: three regions of module 05, one of module 06.
#include <vector>

namespace tt {

struct Linear {
  int forward(int x) const {
    // TT_EXERCISE_BEGIN(05, 2)
    return x + 1;
    // TT_EXERCISE_END
  }
};

template <typename T>
T twice(T a, T unused) {
  auto f = [&](T v) {
    // TT_EXERCISE_BEGIN(05)
    return v * 2;
    // TT_EXERCISE_END
  };
  return f(a);
}

double Sched::lr_at(long epoch, double base) const {
  // TT_EXERCISE_BEGIN(05, 1)
  return base / double(epoch + 1);
  // TT_EXERCISE_END
}

int loss(int a) {
  if (a > 0) {
    // TT_EXERCISE_BEGIN(06)
    return a;
    // TT_EXERCISE_END
  }
  return 0;
}

}  // namespace tt
"""

README_05 = """\
# Module 05 \u2014 Layers

> **Time:** about 45 min \u00b7 **Prerequisites:** modules 01\u201304

Text.
"""

README_06 = """\
# Module 06 \u2014 Losses

> **Time:** about 30 min \u00b7 **Prerequisites:** module 05 \u00b7 **Milestone:** a loss that learns
"""


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def junit(cases):
    """A CTest-like JUnit file: cases = [(name, status, output)]."""
    from xml.sax.saxutils import escape
    rows = []
    for name, status, output in cases:
        inner = '<failure message="Failed"/>' if status == "fail" else ""
        rows.append(f'<testcase name="{escape(name)}" classname="x" time="0.1" status="{status}">{inner}'
                    f"<system-out>{escape(output)}</system-out></testcase>")
    return '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="x">' + "".join(rows) + "</testsuite>\n"


class FixtureTest(unittest.TestCase):
    def setUp(self):
        ex._ALL_REGIONS.clear()
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "root")
        write(self.root, "CMakeLists.txt", "# fixture\n")
        write(self.root, "modules/05_layers/README.md", README_05)
        write(self.root, "modules/06_losses/README.md", README_06)
        write(self.root, "tinytorch/nn/layers.cpp", LAYERS)
        write(self.root, "tinytorch/core/other.cpp", "// untouched\nint other() { return 1; }\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = ex.main(list(args))
        return rc, out.getvalue(), err.getvalue()


class Markers(FixtureTest):
    def test_both_forms_and_the_order(self):
        regions = ex.module_regions(self.root, "05")
        # steps first by K (1, 2), then the region without a step
        self.assertEqual([r.location for r in regions],
                         ["tinytorch/nn/layers.cpp:25", "tinytorch/nn/layers.cpp:8", "tinytorch/nn/layers.cpp:17"])
        self.assertEqual([r.step for r in regions], [1, 2, None])
        self.assertEqual([r.order for r in regions], [1, 2, 3])
        self.assertEqual(len(ex.module_regions(self.root, "06")), 1)

    def test_function_names(self):
        names = {r.location: r.function for r in ex.module_regions(self.root, "05")}
        self.assertEqual(names["tinytorch/nn/layers.cpp:8"], "Linear::forward")  # member of a struct
        self.assertEqual(names["tinytorch/nn/layers.cpp:17"], "twice")  # a lambda: its enclosing function
        self.assertEqual(names["tinytorch/nn/layers.cpp:25"], "Sched::lr_at")  # defined out of its class
        self.assertEqual(ex.module_regions(self.root, "06")[0].function, "loss")  # inside an if

    def test_malformed_markers(self):
        for bad in ["// TT_EXERCISE_BEGIN(05, )", "// TT_EXERCISE_BEGIN(05, x)", "// TT_EXERCISE_BEGIN 05",
                    "// TT_EXERCISE_BEGN(05)"]:
            lines = ["void f() {\n", f"  {bad}\n", "  // TT_EXERCISE_END\n", "}\n"]
            with self.assertRaisesRegex(ex.ExerciseError, r"a\.cpp:2: malformed exercise marker"):
                ex.find_regions(lines, "a.cpp")
        with self.assertRaisesRegex(ex.ExerciseError, "steps count from 1"):
            ex.find_regions(["// TT_EXERCISE_BEGIN(05, 0)\n", "// TT_EXERCISE_END\n"], "a.cpp")
        with self.assertRaisesRegex(ex.ExerciseError, r"a\.cpp:1: TT_EXERCISE_END without"):
            ex.find_regions(["// TT_EXERCISE_END\n"], "a.cpp")
        with self.assertRaisesRegex(ex.ExerciseError, r"a\.cpp:1: TT_EXERCISE_BEGIN without"):
            ex.find_regions(["// TT_EXERCISE_BEGIN(05)\n"], "a.cpp")

    def test_duplicate_step_names_both_places(self):
        write(self.root, "tinytorch/nn/more.cpp", "int g() {\n  // TT_EXERCISE_BEGIN(05, 2)\n  return 1;\n"
              "  // TT_EXERCISE_END\n}\n")
        rc, _, err = self.run_main("list", self.root, "5")
        self.assertEqual(rc, 1)
        self.assertIn("module 05: step 2 is given twice", err)
        self.assertIn("tinytorch/nn/layers.cpp:8", err)
        self.assertIn("tinytorch/nn/more.cpp:2", err)

    def test_list(self):
        rc, out, _ = self.run_main("list", self.root, "05")
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        self.assertEqual(len(lines), 3)
        self.assertRegex(lines[0], r"^step  1  `Sched::lr_at` +tinytorch/nn/layers.cpp:25$")
        self.assertRegex(lines[2], r"^step  3  `twice` +tinytorch/nn/layers.cpp:17$")


class Stubs(FixtureTest):
    def test_stub_names_function_place_step_and_readme(self):
        dest = os.path.join(self.tmp.name, "copy")
        self.assertEqual(self.run_main("make", self.root, dest, "05")[0], 0)
        text = read(dest, "tinytorch/nn/layers.cpp")
        # The stub names its own file and line in the copy (the preamble moved it down 9 lines), and
        # the region's place in the library.
        lines = text.splitlines()
        self.assertIn('throw ::tt::Error("exercise 05: stub of `Sched::lr_at` at '
                      f'{dest}/tinytorch/nn/layers.cpp:34 (library: tinytorch/nn/layers.cpp:25), '
                      'step 1 of 3 \u2014 write its body there; see modules/05_layers/README.md");', lines[33])
        self.assertIn(f"stub of `Linear::forward` at {dest}/tinytorch/nn/layers.cpp:17 "
                      "(library: tinytorch/nn/layers.cpp:8), step 2 of 3", lines[16])
        self.assertIn("stub of `twice` at", lines[25])
        self.assertIn("(library: tinytorch/nn/layers.cpp:17), step 3 of 3", lines[25])
        # inside the project, the copy is named from the project's root
        self.run_main("make", self.root, os.path.join(self.root, "exercises", "05"), "05")
        self.assertIn("stub of `Linear::forward` at exercises/05/tinytorch/nn/layers.cpp:17 ",
                      read(self.root, "exercises/05/tinytorch/nn/layers.cpp"))
        self.assertNotIn("return x + 1;", text)
        self.assertIn("return a;", text)  # module 06's region is left alone
        self.assertEqual(text.count("// TT_EXERCISE_BEGIN(05"), 3)  # markers kept
        # the stub's warnings are silenced in the stubbed file itself, popped at its end
        self.assertIn('#pragma GCC diagnostic ignored "-Wunused-parameter"', text)
        self.assertTrue(text.endswith("#pragma GCC diagnostic pop\n"))
        self.assertIn('#include "tinytorch/core/error.h"', text)
        # files without regions are copied byte for byte
        self.assertEqual(read(dest, "tinytorch/core/other.cpp"), read(self.root, "tinytorch/core/other.cpp"))

    def test_only_follows_the_list_order(self):
        dest = os.path.join(self.tmp.name, "copy")
        self.run_main("make", self.root, dest, "05", "--only", "2")
        text = read(dest, "tinytorch/nn/layers.cpp")
        self.assertIn("stub of `Linear::forward`", text)
        self.assertNotIn("stub of `Sched::lr_at`", text)
        self.run_main("make", self.root, dest, "05", "--only", "0")
        self.assertEqual(read(dest, "tinytorch/nn/layers.cpp"), LAYERS)
        rc, _, err = self.run_main("make", self.root, dest, "05", "--only", "4")
        self.assertEqual(rc, 1)
        self.assertIn("has 3 regions", err)


HEADER = """\
// A fixture header: an inline member function and a free one with exercise bodies.
#pragma once
#include <cstdint>

namespace tt::detail {

struct Half {
  static TT_HOST_DEVICE uint16_t round(float f, int mode = 0) {
    uint32_t u = 0;
    // TT_EXERCISE_BEGIN(05, 4)
    u = uint32_t(f) + uint32_t(mode);
    // TT_EXERCISE_END
    return uint16_t(u);
  }
  template <typename T>
  T keep(T v) {
    // TT_EXERCISE_BEGIN(05, 5)
    return v;
    // TT_EXERCISE_END
  }
};

inline int twice(int a) {
  // TT_EXERCISE_BEGIN(05, 6)
  return 2 * a;
  // TT_EXERCISE_END
}

}  // namespace tt::detail
"""


class HeaderBodies(FixtureTest):
    def test_header_bodies_move_out_of_line_in_the_copy(self):
        write(self.root, "tinytorch/core/half.h", HEADER)
        ex._ALL_REGIONS.clear()
        dest = os.path.join(self.root, "exercises", "05")
        self.assertEqual(self.run_main("make", self.root, dest, "05")[0], 0)
        header = read(dest, "tinytorch/core/half.h")
        unit = read(dest, "tinytorch/core/half_exercise.cpp")
        # the header keeps declarations (default argument kept, `inline` gone) and the template
        self.assertIn("  static uint16_t round(float f, int mode = 0);  // exercise copy: the body "
                      "is in tinytorch/core/half_exercise.cpp\n", header)  # TT_HOST_DEVICE means inline
        self.assertIn("int twice(int a);  // exercise copy", header)
        self.assertNotIn("inline int twice", header)
        self.assertIn("stub of `Half::keep`", header)  # a template cannot move: stubbed in place
        self.assertNotIn("Half::round` at", header)
        # the unit defines them, qualified, without specifiers or default arguments, in file order
        self.assertIn('#include "tinytorch/core/half.h"\n', unit)
        self.assertIn("namespace tt::detail {\n\nuint16_t Half::round(float f, int mode) {\n  uint32_t u = 0;\n"
                      "  // TT_EXERCISE_BEGIN(05, 4)\n  throw ::tt::Error(", unit)
        self.assertLess(unit.index("Half::round"), unit.index("int twice(int a) {"))
        self.assertIn("  return uint16_t(u);\n}\n", unit)
        lines = unit.splitlines()
        at = next(i for i, line in enumerate(lines) if "stub of `Half::round`" in line)
        self.assertIn(f"at exercises/05/tinytorch/core/half_exercise.cpp:{at + 1} (library: tinytorch/core/half.h:10)",
                      lines[at])
        # the summary finds the stub in the unit, and --only 0 takes the unit away again
        left = {r.function: place for r, place in ex.remaining_stubs(self.root, dest, "05")}
        self.assertEqual(left["Half::round"], f"tinytorch/core/half_exercise.cpp:{at + 1}")
        rc, out, _ = self.run_main("list", self.root, "05", "--copy", dest)
        self.assertIn(f"exercises/05/tinytorch/core/half_exercise.cpp:{at + 1}  (library: tinytorch/core/half.h:10)", out)
        # solving every step gives back the library's text (the moved bodies in the unit)
        for i in range(1, 7):
            self.assertEqual(self.run_main("solve", self.root, dest, "05", "--only", str(i))[0], 0)
        self.assertEqual(ex.remaining_stubs(self.root, dest, "05"), [])
        self.assertIn("namespace tt::detail {\n\nuint16_t Half::round(float f, int mode) {\n  uint32_t u = 0;\n"
                      "  // TT_EXERCISE_BEGIN(05, 4)\n  u = uint32_t(f) + uint32_t(mode);\n  // TT_EXERCISE_END\n",
                      read(dest, "tinytorch/core/half_exercise.cpp"))
        self.assertIn("    // TT_EXERCISE_BEGIN(05, 5)\n    return v;\n", read(dest, "tinytorch/core/half.h"))
        rc, _, err = self.run_main("solve", self.root, dest, "05", "--only", "4")
        self.assertEqual(rc, 1)
        self.assertIn("has no stub", err)
        self.run_main("make", self.root, dest, "05", "--only", "0")
        self.assertFalse(os.path.exists(os.path.join(dest, "tinytorch/core/half_exercise.cpp")))
        self.assertEqual(read(dest, "tinytorch/core/half.h"), HEADER)


class Summary(FixtureTest):
    def setUp(self):
        super().setUp()
        self.copy = os.path.join(self.root, "exercises", "05")
        self.run_main("make", self.root, self.copy, "05")

    def write_run(self, cases):
        path = os.path.join(self.copy, "last-run.xml")
        write(self.copy, "last-run.xml", junit(cases))
        return path

    def test_classifies_blocked_and_own_failures(self):
        # as Catch prints it: wrapped at 80 columns, here inside the function's name
        stub = ("due to unexpected exception with message:\n  exercise 05: stub of `Sched::\n  lr_at` "
                "(tinytorch/nn/layers.cpp:25), step 1 of 3 \u2014 write its body; see modules/05_layers/README.md")
        stub = "t.cpp:10: FAILED:\n  {Unknown expression after the reported line}\n" + stub
        own = "t.cpp:20: FAILED:\n  REQUIRE( y == 3 )\nwith expansion:\n  4 == 3\n"
        path = self.write_run([("test_05_layers:schedule decays", "fail", stub),
                               ("test_05_layers:schedule at zero", "fail", stub + "\n" + stub),
                               ("test_05_layers:forward adds one", "fail", own),
                               ("test_05_layers:mixed", "fail", "t.cpp:30: FAILED:\n  CHECK( a == b )\n" + stub),
                               ("test_05_layers:crashed", "fail", "Segmentation fault"),
                               ("test_05_layers:shapes", "run", "")])
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05", path)
        self.assertEqual(rc, 1)
        self.assertIn("blocked by the stub of `Sched::lr_at`: schedule decays", out)
        self.assertIn("failed in YOUR CODE: forward adds one\n", out)
        # an assertion of its own failed before the stub was reached: the learner's to read
        self.assertIn("failed in YOUR CODE: mixed (then it ran into the stub of `Sched::lr_at`)", out)
        self.assertIn("failed in YOUR CODE: crashed", out)
        self.assertIn("4 == 3", out)  # the learner's own failure is shown in full
        self.assertIn("Segmentation fault", out)
        self.assertEqual(out.count("due to unexpected exception"), 1)  # only in the mixed case's report
        self.assertIn("Summary: 1 of 6 cases passed; 2 cases blocked by the stub of `Sched::lr_at` "
                      "(tinytorch/nn/layers.cpp:25); 3 failed in your code: forward adds one, mixed, crashed.", out)
        self.assertRegex(out, r"3 stubs of 3 still to write\. Next: step 1, `Sched::lr_at` at "
                              r"exercises/05/tinytorch/nn/layers.cpp:\d+ \(library: tinytorch/nn/layers.cpp:25\)")
        state = json.loads(read(self.copy, "last-run.json"))
        self.assertEqual((state["state"], state["failed"], state["total"]), ("failed", 5, 6))

    def test_written_regions_are_not_counted(self):
        text = read(self.copy, "tinytorch/nn/layers.cpp").splitlines(keepends=True)
        text = [line for line in text if "stub of `Sched::lr_at`" not in line]  # the learner wrote it
        write(self.copy, "tinytorch/nn/layers.cpp", "".join(text))
        path = self.write_run([("test_05_layers:shapes", "run", "")])
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05", path)
        self.assertEqual(rc, 0)
        self.assertIn("Summary: all 1 cases passed.", out)
        self.assertIn("2 stubs of 3 still to write. Next: step 2, `Linear::forward`", out)

    def write_step(self, function):
        """The learner replaces the stub of `function` (a body of their own)."""
        text = read(self.copy, "tinytorch/nn/layers.cpp").splitlines(keepends=True)
        text = [line if f"stub of `{function}`" not in line else "  return 0;\n" for line in text]
        write(self.copy, "tinytorch/nn/layers.cpp", "".join(text))

    def test_where_the_learner_stands(self):
        stub1 = "t.cpp:1: FAILED:\n  exercise 05: stub of `Sched::lr_at` at x:1 (library: tinytorch/nn/layers.cpp:25)"
        stub2 = "t.cpp:1: FAILED:\n  exercise 05: stub of `Linear::forward` at x:1 (library: tinytorch/nn/layers.cpp:8)"
        own = "t.cpp:2: FAILED:\n  REQUIRE( y == 3 )\n"
        # first run: everything blocked by step 1
        self.run_main("summary", self.root, self.copy, "05",
                      self.write_run([("test_05_layers:decay", "fail", stub1), ("test_05_layers:fwd", "fail", stub1)]))
        # step 1 written but wrong: "fix step 1 first", and the next step is not offered yet
        self.write_step("Sched::lr_at")
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05",
                                   self.write_run([("test_05_layers:decay", "fail", own),
                                                   ("test_05_layers:fwd", "fail", stub2)]))
        self.assertEqual(rc, 1)
        self.assertIn("failed in YOUR CODE (step 1): decay", out)
        self.assertRegex(out, r"Fix step 1 first: `Sched::lr_at` at exercises/05/tinytorch/nn/layers.cpp:\d+ "
                              r"\(library: tinytorch/nn/layers.cpp:25\); 1 case fails in your code: decay\.")
        self.assertIn("2 stubs of 3 still to write; step 2 comes after step 1 passes.", out)
        self.assertNotIn("Next:", out)
        self.assertEqual(json.loads(read(self.copy, "last-run.json"))["fix_step"], 1)
        # step 1 fixed: it passes, and step 2 is next
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05",
                                   self.write_run([("test_05_layers:decay", "run", ""),
                                                   ("test_05_layers:fwd", "fail", stub2)]))
        self.assertIn("Step 1 passes: no case fails in `Sched::lr_at`.", out)
        self.assertIn("2 stubs of 3 still to write. Next: step 2, `Linear::forward`", out)
        # step 2 written, and the case that its stub blocked now fails: step 2 is the one to fix
        self.write_step("Linear::forward")
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05",
                                   self.write_run([("test_05_layers:decay", "run", ""),
                                                   ("test_05_layers:fwd", "fail", own)]))
        self.assertIn("Step 1 passes", out)
        self.assertIn("Fix step 2 first: `Linear::forward`", out)
        self.assertIn("1 stub of 3 still to write; step 3 comes after step 2 passes.", out)

    def test_empty_filtered_and_skipped_runs(self):
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05", self.write_run([]))
        self.assertEqual(rc, 1)
        self.assertIn("no test case ran", out)
        self.assertEqual(json.loads(read(self.copy, "last-run.json"))["state"], "no tests")
        # a run narrowed by CTest arguments is summarized, not recorded
        path = self.write_run([("test_05_layers:a", "run", ""), ("test_05_layers:b", "notrun", "")])
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05", path, "--no-record")
        self.assertEqual(rc, 0)
        self.assertIn("Summary: 1 of 2 cases passed; 1 case skipped.", out)
        self.assertEqual(json.loads(read(self.copy, "last-run.json"))["state"], "no tests")

    def test_a_copy_with_old_stubs_is_told_to_reset(self):
        write(self.copy, "tinytorch/nn/old.cpp", 'throw ::tt::Error("exercise 05: implement this (see x)");\n')
        rc, out, _ = self.run_main("summary", self.root, self.copy, "05", self.write_run([]))
        self.assertIn("made by an older tools/tt", out)
        self.assertIn("tools/tt exercise 05 --reset", out)

    def test_status(self):
        build = os.path.join(self.tmp.name, "build")
        status_dir = os.path.join(build, "tt-status")
        write(status_dir, "walkthrough-05", "2026-01-01\n")
        write(status_dir, "last-test.xml", junit([("test_06_losses:a", "run", ""), ("test_06_losses:b", "fail", "x"),
                                                  ("test_core:c", "fail", "")]))
        self.assertEqual(self.run_main("record", os.path.join(status_dir, "last-test.xml"), status_dir)[0], 0)
        self.assertFalse(os.path.exists(os.path.join(status_dir, "suite-05.json")))
        self.run_main("summary", self.root, self.copy, "05",
                      self.write_run([("test_05_layers:a", "fail", "exercise 05: stub of `twice` "
                                                         "(tinytorch/nn/layers.cpp:17)")]))
        rc, out, _ = self.run_main("status", self.root, build)
        self.assertEqual(rc, 0)
        lines = out.splitlines()
        row05 = next(line for line in lines if line.startswith("05"))
        row06 = next(line for line in lines if line.startswith("06"))
        self.assertRegex(row05, r"Layers +about 45 min +ran +never run +failed 1 of 1 +3 of 3 to write")
        self.assertRegex(row06, r"Losses +about 30 min +not yet +failed 1 of 2 +- +no copy yet +milestone: a loss")
        # mid-exercise, the next step is the exercise, not the first walkthrough not yet run
        self.assertEqual(lines[-1], "next: tools/tt exercise 05  (step 1 of 3, `Sched::lr_at` at "
                                    "exercises/05/tinytorch/nn/layers.cpp:34)")

    def test_status_points_at_the_exercise_under_way(self):
        build = os.path.join(self.tmp.name, "build")
        write(self.root, "tinytorch/nn/losses.cpp", "int l() {\n  // TT_EXERCISE_BEGIN(06)\n  return 1;\n"
              "  // TT_EXERCISE_END\n}\n")
        ex._ALL_REGIONS.clear()
        copy06 = os.path.join(self.root, "exercises", "06")
        self.run_main("make", self.root, copy06, "06")
        os.utime(os.path.join(self.root, "exercises", "05"), (1, 1))  # 05 made long ago, 06 just now
        rc, out, _ = self.run_main("status", self.root, build)
        self.assertIn("next: tools/tt exercise 06  (step 1 of 2", out.splitlines()[-1])
        # a run of 05 whose step 1 failed in the learner's code makes 05 the latest, with its verdict
        write(self.copy, "last-run.json", json.dumps({"state": "failed", "failed": 1, "total": 2, "fix_step": 1}))
        rc, out, _ = self.run_main("status", self.root, build)
        self.assertEqual(out.splitlines()[-1], "next: tools/tt exercise 05  (fix step 1 of 3 first, `Sched::lr_at`)")

    def test_record_counts_suites_run_whole(self):
        # Module 16's suite runs as whole executables (tt_add_mpi_test): _alone and _npN count for it.
        status_dir = os.path.join(self.tmp.name, "build", "tt-status")
        write(status_dir, "last-test.xml", junit([("test_16_distributed_alone", "run", ""),
                                                  ("test_16_distributed_np2", "run", ""),
                                                  ("test_16_distributed_np3", "fail", "rank 1: x"),
                                                  ("readme_16", "fail", ""), ("test_distributed_np2", "fail", "")]))
        self.assertEqual(self.run_main("record", os.path.join(status_dir, "last-test.xml"), status_dir)[0], 0)
        with open(os.path.join(status_dir, "suite-16.json")) as f:
            state = json.load(f)
        self.assertEqual((state["state"], state["total"], state["failed"]), ("failed", 3, 1))
        self.assertEqual(sorted(os.listdir(status_dir)), ["last-test.xml", "suite-16.json"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
