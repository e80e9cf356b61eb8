#!/usr/bin/env python3
"""Times the exercise loop as a learner meets it: for each module, a fresh copy with every region
stubbed, then one region written at a time (its library body put over its stub, in the recommended
order), each followed by `tools/tt exercise NN`. Prints, per module, the first run and every
edit-to-verdict time, the slowest edit, and the verdict line tt printed after it. Standard library only.

    tools/exercise_loop.py [NN ...]          (default: every module with exercise regions)

The copies are scratch folders under exercises/.loop-XXXXXX (removed afterwards) so ccache serves
them as it serves a learner's copies; the main build must exist (tools/tt build). The target the
course sets: every edit's verdict in under 30 s on the project's 2-core machine.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import exercise  # noqa: E402  (tools/exercise.py)

TARGET_S = 30.0
# The lines of tt's output that say where the learner stands.
VERDICT = re.compile(r"^(Summary:|Step|Steps|Fix step|Every region|\d+ stubs? of|tt: no test|tt: error)")


def run_tt(module, copies, edit=False):
    """Runs `tools/tt exercise NN` on the copy under `copies`: (seconds, exit status, output, the
    verdict lines). After an edit, ccache recompiles what changed (CCACHE_RECACHE) instead of
    serving it: the bodies this script writes are the library's own, which an earlier run may have
    compiled, while a learner's are new."""
    env = dict(os.environ, TT_EXERCISES_DIR=copies)
    if edit:
        env["CCACHE_RECACHE"] = "1"
    start = time.monotonic()
    proc = subprocess.run([os.path.join(ROOT, "tools", "tt"), "exercise", module], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    verdict = [line for line in proc.stdout.splitlines() if VERDICT.match(line)]
    return seconds, proc.returncode, proc.stdout, verdict


def time_module(module, log):
    regions = exercise.module_regions(ROOT, module)
    os.makedirs(os.path.join(ROOT, "exercises"), exist_ok=True)
    copies = tempfile.mkdtemp(prefix=".loop-", dir=os.path.join(ROOT, "exercises"))
    rows = []
    try:
        seconds, rc, output, verdict = run_tt(module, copies)
        log.write(output)
        rows.append(("first run", "", seconds, rc, verdict))
        print(f"  {module} first run            {seconds:6.1f} s  " + " | ".join(verdict[-2:]), flush=True)
        for r in regions:
            exercise.solve(ROOT, os.path.join(copies, module), module, r.order)
            seconds, rc, output, verdict = run_tt(module, copies, edit=True)
            log.write(output)
            rows.append((f"step {r.order}", f"`{r.function}` {r.location}", seconds, rc, verdict))
            print(f"  {module} step {r.order:<2} {r.function[:18]:<18} {seconds:6.1f} s  " + " | ".join(verdict[-2:]),
                  flush=True)
    finally:
        shutil.rmtree(copies, ignore_errors=True)
    return rows


def main(argv):
    modules = [f"{int(a):02d}" for a in argv] or sorted(
        n[:2] for n in os.listdir(os.path.join(ROOT, "modules")) if re.match(r"\d\d_", n))
    modules = [m for m in modules if exercise.module_regions(ROOT, m)]
    if not os.path.isfile(os.path.join(ROOT, "build", "CMakeCache.txt")):
        print("exercise_loop: build the main build first (tools/tt build)", file=sys.stderr)
        return 1
    worst = []
    with open(os.path.join(ROOT, "build", "exercise-loop.log"), "w", encoding="utf-8") as log:
        for module in modules:
            rows = time_module(module, log)
            edits = rows[1:]
            slow = max(edits, key=lambda row: row[2])
            done = edits[-1][3] == 0
            worst.append((module, len(edits), rows[0][2], slow, done))
    print("\nmodule  regions  first run  slowest edit (s)  region                                   verdict")
    for module, count, first, slow, done in worst:
        flag = "" if slow[2] < TARGET_S else f"  OVER {TARGET_S:.0f} s"
        print(f"  {module}    {count:>5}  {first:7.1f} s  {slow[2]:14.1f}    {slow[0] + ' ' + slow[1]:<40} "
              f"{'module done' if done else 'FAILED'}{flag}")
    return 0 if all(w[3][2] < TARGET_S and w[4] for w in worst) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
