#!/usr/bin/env python3
"""Tests of tools/milestones.py (`tools/tt milestone`) on a small fixture tree in a temp dir: whose code
a milestone runs, the stop on a stub left in a learner's copy, the tree of the learner's code, the
verdict kept for `tt status`, and the real table's consistency with milestones/CMakeLists.txt.

Run by CTest (label `tools`): test_milestones.py PATH/TO/tools/milestones.py. Standard library only.
"""

import contextlib
import importlib.util
import io
import os
import re
import sys
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                                        os.path.join(os.path.dirname(__file__), "../../tools/milestones.py")))
sys.path.insert(0, TOOLS)
import exercise as ex  # noqa: E402
import milestones as ms  # noqa: E402

PROJECT = os.path.dirname(TOOLS)

LAYERS = """\
// A fixture: a region of module 05 and one of module 06 in the same file.
namespace tt {

int forward(int x) {
  // TT_EXERCISE_BEGIN(05, 1)
  return x + 1;
  // TT_EXERCISE_END
}

int loss(int a) {
  // TT_EXERCISE_BEGIN(06, 1)
  return a * a;
  // TT_EXERCISE_END
}

}  // namespace tt
"""

# A header region: a copy moves its body out of line into ops_exercise.cpp.
HEADER = """\
// A fixture header with module 05's second region.
#pragma once
namespace tt {

inline int scale(int x) {
  // TT_EXERCISE_BEGIN(05, 2)
  return 3 * x;
  // TT_EXERCISE_END
}

}  // namespace tt
"""

FIXTURE = [dict(name="tiny", year="1999", title="a fixture milestone", modules=["05", "06"], data="none",
                data_needs=[], passes="always", program="milestone_tiny", ranks=0),
           dict(name="later", year="2030", title="waits", modules=["05", "99"], data="none", data_needs=[],
                passes="never", program="milestone_later", ranks=0, waits="99 (issue 0)")]


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


class Fixture(unittest.TestCase):
    def setUp(self):
        ex._ALL_REGIONS.clear()
        self.saved = ms.MILESTONES
        ms.MILESTONES = FIXTURE
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "root")
        self.build = os.path.join(self.tmp.name, "build")
        write(self.root, "CMakeLists.txt", "# fixture\n")
        write(self.root, "modules/05_layers/README.md", "# Module 05 \u2014 Layers\n")
        write(self.root, "modules/06_losses/README.md", "# Module 06 \u2014 Losses\n")
        write(self.root, "tinytorch/nn/layers.cpp", LAYERS)
        write(self.root, "tinytorch/ops/ops.h", HEADER)
        write(self.root, "milestones/tiny.cpp", "// the program\n")
        write(self.root, "examples/cli.h", "// a header the programs use\n")

    def tearDown(self):
        ms.MILESTONES = self.saved
        self.tmp.cleanup()

    def main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = ms.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def copy(self, module):
        dest = os.path.join(self.root, "exercises", module)
        ex.make(self.root, dest, module, None)
        return dest

    def solve(self, module, order, extra=""):
        """Writes region `order`'s library body over its stub, plus an `extra` line of the learner's."""
        copy = os.path.join(self.root, "exercises", module)
        ex.solve(self.root, copy, module, order)
        if extra:
            for rel in ("tinytorch/nn/layers.cpp", "tinytorch/ops/ops_exercise.cpp"):
                path = os.path.join(copy, rel)
                if not os.path.exists(path):
                    continue
                text = read(copy, rel)
                region = ex.module_regions(self.root, module)[order - 1]
                marker = f"// TT_EXERCISE_BEGIN({module}, {order})\n"
                if region.rel == rel or rel.endswith("_exercise.cpp") and region.rel.endswith(".h"):
                    if marker in text:
                        write(copy, rel, text.replace(marker, marker + "  " + extra + "\n", 1))
                        return


class WhoseCode(Fixture):
    def test_reference_without_copies(self):
        rc, out, _ = self.main("plan", self.root, "tiny")
        self.assertEqual((rc, out.strip()), (0, "reference"))
        rc, out, _ = self.main("describe", self.root, "tiny")
        self.assertIn("code: the library's own (the reference) for modules 05-06", out)

    def test_a_stub_left_stops_the_milestone_and_is_named(self):
        self.copy("05")
        rc, out, err = self.main("plan", self.root, "tiny")
        self.assertEqual(rc, 3)
        self.assertEqual(out, "")
        self.assertRegex(err, r"module 05's `forward` is still a stub at exercises/05/tinytorch/nn/layers\.cpp:\d+ "
                              r"\(step 1 of 2\) \(and 1 more stub\)")
        self.assertIn("tools/tt exercise 05", err)
        # compose refuses the same way: nothing is built from a stub
        rc, _, err = self.main("compose", self.root, os.path.join(self.tmp.name, "tree"), "tiny")
        self.assertEqual(rc, 3)
        self.assertIn("still a stub", err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "tree")))

    def test_the_learners_copy_is_named(self):
        self.copy("05")
        self.solve("05", 1)
        self.solve("05", 2)
        rc, out, _ = self.main("plan", self.root, "tiny")
        self.assertEqual((rc, out.strip()), (0, "tree"))
        rc, out, _ = self.main("describe", self.root, "tiny")
        self.assertIn("code: yours for module 05 (exercises/05)", out)
        self.assertIn("the library's (reference) for modules 06", out)

    def test_a_milestone_that_waits_for_a_module(self):
        rc, _, err = self.main("plan", self.root, "later")
        self.assertEqual(rc, 3)
        self.assertIn("needs module 99 (issue 0), which does not exist yet", err)
        rc, out, _ = self.main("names", self.root, "all")
        self.assertEqual(out.split(), ["tiny"])
        rc, _, err = self.main("names", self.root, "nope")
        self.assertEqual(rc, 3)
        self.assertIn("there is no milestone 'nope'; the milestones are: tiny, later", err)


class Compose(Fixture):
    def test_the_tree_holds_the_learners_bodies_and_nothing_else_changes(self):
        self.copy("05")
        self.solve("05", 1, extra="// mine: forward")
        self.solve("05", 2, extra="// mine: scale")
        tree = os.path.join(self.tmp.name, "tree")
        rc, _, err = self.main("compose", self.root, tree, "tiny")
        self.assertEqual(rc, 0, err)
        layers = read(tree, "tinytorch/nn/layers.cpp")
        self.assertIn("  // mine: forward\n  return x + 1;", layers)
        self.assertIn("return a * a;", layers)  # module 06 has no copy: the library's body
        header = read(tree, "tinytorch/ops/ops.h")
        self.assertIn("// mine: scale", header)  # moved out of line in the copy, back in the header here
        self.assertIn("inline int scale(int x) {", header)
        self.assertFalse(os.path.exists(os.path.join(tree, "tinytorch/ops/ops_exercise.cpp")))
        self.assertEqual(read(tree, "milestones/tiny.cpp"), "// the program\n")  # the programs come along
        self.assertEqual(read(tree, "examples/cli.h"), "// a header the programs use\n")
        self.assertNotIn("mine", read(self.root, "tinytorch/nn/layers.cpp"))  # the library is untouched
        self.assertEqual(read(self.root, "tinytorch/ops/ops.h"), HEADER)

    def test_a_learners_bug_reaches_the_tree(self):
        self.copy("06")
        copy = os.path.join(self.root, "exercises", "06")
        text = read(copy, "tinytorch/nn/layers.cpp")
        begin = text.index("// TT_EXERCISE_BEGIN(06, 1)\n") + len("// TT_EXERCISE_BEGIN(06, 1)\n")
        end = text.index("  // TT_EXERCISE_END", begin)
        write(copy, "tinytorch/nn/layers.cpp", text[:begin] + "  return a + a;  // a bug\n" + text[end:])
        tree = os.path.join(self.tmp.name, "tree")
        self.assertEqual(self.main("compose", self.root, tree, "tiny")[0], 0)
        self.assertIn("return a + a;  // a bug", read(tree, "tinytorch/nn/layers.cpp"))
        self.assertIn("return x + 1;", read(tree, "tinytorch/nn/layers.cpp"))


    def test_a_file_the_library_no_longer_has_leaves_the_tree(self):
        tree = os.path.join(self.tmp.name, "tree")
        write(self.root, "tinytorch/core/old.cpp", "// moved away later\n")
        self.assertEqual(self.main("compose", self.root, tree, "tiny")[0], 0)
        self.assertTrue(os.path.exists(os.path.join(tree, "tinytorch/core/old.cpp")))
        os.remove(os.path.join(self.root, "tinytorch/core/old.cpp"))
        write(tree, "build/keep.txt", "a build folder is not the library's\n")
        self.assertEqual(self.main("compose", self.root, tree, "tiny")[0], 0)
        self.assertFalse(os.path.exists(os.path.join(tree, "tinytorch/core/old.cpp")))
        self.assertTrue(os.path.exists(os.path.join(tree, "build/keep.txt")))

    def test_a_copy_whose_markers_no_longer_match_is_refused(self):
        self.copy("06")
        copy = os.path.join(self.root, "exercises", "06")
        ex.solve(self.root, copy, "06", 1)
        text = read(copy, "tinytorch/nn/layers.cpp").replace("// TT_EXERCISE_BEGIN(06, 1)\n", "")
        write(copy, "tinytorch/nn/layers.cpp", text)
        rc, _, err = self.main("compose", self.root, os.path.join(self.tmp.name, "tree"), "tiny")
        self.assertEqual(rc, 3)
        self.assertIn("has 1 region(s) of module 06 in the library but 0 TT_EXERCISE_BEGIN(06) marker(s)", err)

    def test_copies_under_tt_exercises_dir(self):
        elsewhere = os.path.join(self.tmp.name, "elsewhere")
        ex.make(self.root, os.path.join(elsewhere, "05"), "05", None)
        os.environ["TT_EXERCISES_DIR"] = elsewhere
        try:
            rc, _, err = self.main("plan", self.root, "tiny")
        finally:
            del os.environ["TT_EXERCISES_DIR"]
        self.assertEqual(rc, 3)
        self.assertIn(f"still a stub at {elsewhere}/05/tinytorch/nn/layers.cpp:", err)


class Verdicts(Fixture):
    def record(self, log_text, rc):
        log = os.path.join(self.tmp.name, "run.log")
        write(self.tmp.name, "run.log", log_text)
        return self.main("record", self.root, self.build, "tiny", log, str(rc), "12.3")

    def test_pass_is_kept_with_its_number_and_whose_code(self):
        rc, out, _ = self.record("progress\nPASS: accuracy 97.00% >= 95.00%\n", 0)
        self.assertEqual((rc, out.strip()), (0, "PASS: accuracy 97.00% >= 95.00%"))
        state = ms.last_verdict(self.build, "tiny")
        self.assertEqual((state["state"], state["code"], state["seconds"]), ("passed", "reference", 12.3))
        self.assertEqual(ms.describe_verdict(state), "passed: accuracy 97.00% >= 95.00% (reference)")
        self.assertEqual(state["verdict"], "PASS: accuracy 97.00% >= 95.00%")

    def test_fail_line(self):
        rc, out, _ = self.record("FAIL: accuracy 50.00% < 95.00%\n", 1)
        self.assertEqual((rc, out.strip()), (0, "FAIL: accuracy 50.00% < 95.00%"))
        self.assertEqual(ms.describe_verdict(ms.last_verdict(self.build, "tiny")),
                         "failed: accuracy 50.00% < 95.00% (reference)")

    def test_a_run_without_a_verdict_records_nothing(self):
        self.record("PASS: accuracy 97.00% >= 95.00%\n", 0)
        for text, status in (("usage: milestone_tiny [--steps N]\n", 0),  # --help
                             ("milestone_tiny: --steps expects a number\n", 2),  # a bad flag
                             ("milestone_tiny: exercise 05: stub of `forward` ...\n", 2)):  # an error
            rc, out, _ = self.record(text, status)
            self.assertEqual(rc, 0)
            self.assertIn(f"no verdict line (exit status {status}): nothing recorded", out)
            self.assertEqual(ms.last_verdict(self.build, "tiny")["state"], "passed")  # the earlier pass stays

    def test_a_pass_line_with_a_failing_status_is_a_failure(self):
        _, out, _ = self.record("PASS: x 1 >= 1\n", 1)
        self.assertIn("(but the program exited with status 1)", out)
        self.assertEqual(ms.last_verdict(self.build, "tiny")["state"], "failed")

    def test_the_status_table(self):
        lines = ms.table_lines(self.root, self.build)
        self.assertIn("not yet", lines[1])
        self.assertIn("waits for module 99 (issue 0)", lines[2])
        self.record("PASS: accuracy 97.00% >= 95.00%\n", 0)
        self.assertIn("passed: accuracy 97.00% >= 95.00% (reference)", ms.table_lines(self.root, self.build)[1])
        self.assertIsNone(ms.next_to_run(self.root, self.build))


class TheRealTable(unittest.TestCase):
    def test_every_runnable_milestone_has_its_program_and_every_program_a_row(self):
        with open(os.path.join(PROJECT, "milestones", "CMakeLists.txt"), encoding="utf-8") as f:
            cmake = f.read()
        listed = re.search(r"set\(TT_MILESTONES ([^)]*)\)", cmake).group(1).split()
        runnable = [m for m in ms.MILESTONES if ms.runnable(m)]
        self.assertEqual(sorted(m["program"] for m in runnable), sorted(f"milestone_{n}" for n in listed))
        for m in runnable:
            self.assertTrue(os.path.exists(os.path.join(PROJECT, "milestones", m["program"][10:] + ".cpp")), m["name"])
            self.assertEqual(m["program"], "milestone_" + m["name"].replace("-", "_"))  # tools/tt's rule
            for nn in m["modules"]:
                self.assertTrue(any(d.startswith(nn + "_") for d in os.listdir(os.path.join(PROJECT, "modules"))),
                                f"{m['name']} needs module {nn}, which does not exist")


if __name__ == "__main__":
    unittest.main()
