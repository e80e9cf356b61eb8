#!/usr/bin/env python3
"""Tests of tools/house.py (which library folder includes which) on small fixture trees in a temp dir.

Run by CTest (label `tools`): test_house.py PATH/TO/tools/house.py. Standard library only.
"""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SPEC = importlib.util.spec_from_file_location("house", sys.argv.pop(1) if len(sys.argv) > 1 else
                                              os.path.join(os.path.dirname(__file__), "../../tools/house.py"))
house = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(house)

# A three-folder library: ops/ sits above core/, and core/tensor.cpp includes it (line 3: upward).
# nn/ includes ops/ (downward). core/ and ops/ reach each other, so they form one knot.
FIXTURE = {
    "lib/core/tensor.h": "// a tensor\n#pragma once\nstruct Tensor {};\n",
    "lib/core/tensor.cpp": ('// tensor methods\n#include "lib/core/tensor.h"\n#include "lib/ops/add.h"\n'
                            '// #include "lib/nn/linear.h" is a comment, not an include\n'
                            '/* #include "lib/nn/linear.h"\n   nor is this */\n'),
    "lib/ops/add.h": '// add\n#pragma once\n#include "lib/core/tensor.h"\n',
    "lib/ops/add.cpp": '// add\n#include "add.h"\n#include <vector>\n#include "missing.h"\n',
    "lib/nn/linear.h": '// linear\n#pragma once\n#include <lib/ops/add.h>\n',
    "lib/lib.h": '// umbrella\n#include "lib/nn/linear.h"\n',
}
ORDER = "core < ops < nn"


def write_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


class HouseTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        write_tree(self.root, FIXTURE)

    def tearDown(self):
        self.tmp.cleanup()

    def run_house(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = house.main(["--root", self.root, "--lib", "lib", "--order", ORDER, *args])
        return rc, out.getvalue()

    def measurement(self, *args):
        rc, out = self.run_house("--json", *args)
        self.assertEqual(rc, 0)
        return json.loads(out)

    def allowlist(self, text):
        path = os.path.join(self.root, "allow.txt")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_edges_are_counted_per_folder_pair(self):
        m = self.measurement()
        edges = {(e["from"], e["to"]): e["count"] for e in m["edges"]}
        self.assertEqual(edges, {("core", "ops"): 1, ("ops", "core"): 1, ("nn", "ops"): 1, ("(root)", "nn"): 1})
        # `#include "add.h"` from ops/add.cpp resolves to ops/add.h: same folder, spelled relatively.
        self.assertEqual([(i["file"], i["line"]) for i in m["relative_includes"]], [("lib/ops/add.cpp", 2)])
        self.assertEqual(m["folders"]["core"]["files"], 2)
        self.assertEqual(m["folders"]["core"]["lines"], 3 + 6)
        self.assertEqual(m["total_lines"], 3 + 6 + 3 + 4 + 3 + 2)

    def test_upward_edge_names_file_and_line(self):
        m = self.measurement()
        self.assertEqual([(u["file"], u["line"], u["src"], u["dst"], u["text"]) for u in m["upward"]],
                         [("lib/core/tensor.cpp", 3, "core", "ops", "lib/ops/add.h")])
        rc, out = self.run_house()
        self.assertEqual(rc, 0)
        self.assertIn("lib/core/tensor.cpp:3  lib/ops/add.h", out)
        self.assertIn("core -> ops (layer 0 -> 1): 1", out)

    def test_strongly_connected_folders(self):
        m = self.measurement()
        self.assertEqual([k["folders"] for k in m["knots"]], [["core", "ops"]])
        self.assertEqual(m["knots"][0]["lines"], 9 + 7)
        self.assertAlmostEqual(m["knots"][0]["share"], 16 / 21)
        rc, out = self.run_house()
        self.assertIn("the knot: 16 of 21 lines (76.2%)", out)

    def test_no_knot_without_a_cycle(self):
        os.remove(os.path.join(self.root, "lib/core/tensor.cpp"))
        m = self.measurement()
        self.assertEqual(m["knots"], [])
        self.assertEqual(m["upward"], [])
        self.assertIn("no strongly connected folders", self.run_house()[1])

    def test_check_fails_on_an_upward_edge(self):
        rc, out = self.run_house("--check")
        self.assertEqual(rc, 1)
        self.assertIn("lib/core/tensor.cpp:3: core includes ops, a higher layer", out)
        self.assertIn("house: FAIL, 1 upward includes not in the allowlist", out)

    def test_check_passes_when_the_order_allows_it(self):
        rc, out = self.run_house("--check", "--order", "core ops < nn")
        self.assertEqual(rc, 0, out)
        self.assertIn("house: OK", out)

    def test_allowlist_by_folder_pair(self):
        rc, out = self.run_house("--check", "--allow", self.allowlist("# why: a test\ncore -> ops\n"))
        self.assertEqual(rc, 0, out)
        self.assertIn("(1 allowed)", out)
        self.assertNotIn("stale", out)

    def test_allowlist_by_file_and_header(self):
        path = self.allowlist("lib/core/tensor.cpp -> lib/ops/add.h  # the one include\n")
        rc, out = self.run_house("--check", "--allow", path)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("stale", out)
        # An entry for another file does not cover this one, and is reported as stale.
        path = self.allowlist("lib/core/tensor.h -> ops\n")
        rc, out = self.run_house("--check", "--allow", path)
        self.assertEqual(rc, 1)
        self.assertIn("stale allowlist entry, line 1: lib/core/tensor.h -> ops", out)

    def test_bad_allowlist_line_is_a_usage_error(self):
        rc, _ = self.run_house("--check", "--allow", self.allowlist("core ops\n"))
        self.assertEqual(rc, 2)

    def test_folder_on_no_layer_fails_the_check(self):
        rc, out = self.run_house("--check", "--order", "core ops")
        self.assertEqual(rc, 1)
        self.assertIn("folder nn/ is on no layer", out)

    def test_bad_order_is_a_usage_error(self):
        self.assertEqual(self.run_house("--order", "core < < ops")[0], 2)
        self.assertEqual(self.run_house("--order", "core < core")[0], 2)

    def test_presets_name_every_folder_once(self):
        for name, layers in house.PRESETS.items():
            folders = [f for layer in layers for f in layer]
            self.assertEqual(len(folders), len(set(folders)), name)
            self.assertEqual(layers[0], ["core"], name)

    def test_tarjan_on_a_graph_with_two_cycles(self):
        nodes = {"a", "b", "c", "d", "e"}
        edges = {("a", "b"), ("b", "a"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "c")}
        self.assertEqual(house.strongly_connected(nodes, edges), [["c", "d", "e"], ["a", "b"]])

    @unittest.skipUnless(shutil.which("git"), "git is not installed")
    def test_rev_reads_a_commit_not_the_working_tree(self):
        def git(*args):
            subprocess.run(["git", "-C", self.root, *args], check=True, capture_output=True)
        git("init", "-q")
        git("add", "lib")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fixture")
        os.remove(os.path.join(self.root, "lib/core/tensor.cpp"))  # the working tree loses the cycle
        self.assertEqual(self.measurement()["knots"], [])
        m = self.measurement("--rev", "HEAD")
        self.assertEqual([k["folders"] for k in m["knots"]], [["core", "ops"]])
        self.assertEqual(m["total_lines"], 21)
        self.assertEqual(self.run_house("--rev", "no-such-commit")[0], 2)

    def test_comments_and_strings(self):
        lines = house.code_lines('a // b\n"x // y" z\n/* c\nd */ e\n')
        self.assertEqual(lines, ["a ", '"x // y" z', "", " e", ""])


if __name__ == "__main__":
    unittest.main(verbosity=1)
