#!/usr/bin/env python3
"""Milestones for tools/tt: the table of them, which code each runs, the tree that holds a learner's
code, and each one's last verdict for `tt status`.

A milestone is a program in milestones/ that re-runs a result from the history of deep learning and
ends with one line, `PASS: ...` or `FAIL: ...`, the measured number against the threshold (exit
status 0 or 1). MILESTONES below is the one list of them: what each re-creates, the modules it
needs, its data, when it passes, and how tools/tt runs it.

Whose code runs: where the learner has an exercise copy (exercises/NN, from `tools/tt exercise NN`)
of a module the milestone needs, the milestone runs the bodies the learner wrote there. `compose`
builds that tree: the library, with each TT_EXERCISE region of those modules replaced by the
learner's text of it (code outside the markers comes from the library). A region that is still a
stub stops the milestone before anything is built, naming the stub. Without any copy, the milestone
runs on the library itself (the reference) from the main build.

    milestones.py list ROOT BUILD_DIR           the table, with each milestone's last verdict
    milestones.py names ROOT [NAME|all]         the runnable milestones NAME stands for, one per line
    milestones.py describe ROOT NAME            the banner: year, result, needs, and whose code runs
    milestones.py plan ROOT NAME                `tree` or `reference`; exit 3 naming a stub left
    milestones.py compose ROOT DEST NAME        write the tree of the learner's code into DEST
    milestones.py packages ROOT NAME...         the Debian packages their data needs
    milestones.py ranks ROOT NAME               the MPI ranks it runs on (0: one plain process)
    milestones.py program ROOT NAME             its program's CMake target (milestones/CMakeLists.txt)
    milestones.py record ROOT BUILD_DIR NAME LOG RC SECONDS
                                                keep the verdict (from LOG) for `tt status` and
                                                print it; a run without one records nothing
Standard library only.
"""

import argparse
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exercise  # noqa: E402  (the regions, the copies, the JSON helpers)

# What a milestone needs besides a built program: (path that must exist, Debian package providing it).
DIGITS = ("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz", "python3-sklearn")
FASHION = ("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", "dataset-fashion-mnist")

BASICS = ["01", "02", "03", "04", "05", "06", "07", "08"]  # tensors to the training loop
ATTENTION = BASICS + ["10", "11", "12", "14"]

# The milestones in historical order. Each: name (what `run` takes), year, the result it re-creates,
# the modules whose code it runs, its data, when it passes, its program (the CMake target tools/tt
# builds and runs, milestones/CMakeLists.txt), the MPI ranks it runs on (0: one plain process), and
# `waits`: the module it needs that does not exist yet (the issue that adds it adds the program).
MILESTONES = [
    dict(name="perceptron", year="1958", title="Rosenblatt's perceptron learns a line, and cannot learn XOR",
         modules=["01"], data="two separable clouds; XOR", data_needs=[],
         passes="100% training accuracy on the clouds; XOR fails visibly (3 corners of 4 at most)",
         program="milestone_perceptron", ranks=0),
    dict(name="xor", year="1986", title="XOR solved by backpropagation (Rumelhart, Hinton, Williams)",
         modules=BASICS, data="XOR", data_needs=[],
         passes="100% with a 2-layer MLP", program="milestone_xor", ranks=0),
    dict(name="digits", year="1986", title="an MLP reads handwritten digits",
         modules=BASICS, data="the 8x8 digits (scikit-learn's copy of UCI's, Debian python3-sklearn)",
         data_needs=[DIGITS], passes=">= 95% test accuracy", program="milestone_digits", ranks=0),
    dict(name="lenet", year="1998", title="LeNet, a convolutional network, reads images",
         modules=BASICS + ["17"], data="Fashion-MNIST (Debian dataset-fashion-mnist)", data_needs=[FASHION],
         passes=">= 90% test accuracy", program="milestone_lenet", ranks=0, waits="17 (issue 32)"),
    dict(name="attention", year="2017", title="attention is all you need: a transformer reverses digits",
         modules=ATTENTION, data="digit reversal (8 digits)", data_needs=[],
         passes=">= 99% of held-out rows exactly right", program="milestone_attention", ranks=0),
    dict(name="data-parallel", year="2017", title="synchronous data parallelism: 2 ranks train as 1 big batch",
         modules=ATTENTION + ["16"], data="digit reversal", data_needs=[],
         passes="2 ranks match 1 rank on the whole batch to 1e-6", program="milestone_data_parallel",
         ranks=2),
    dict(name="gpt-subwords", year="2019", title="a GPT on subword tokens",
         modules=ATTENTION + ["18"], data="the module READMEs", data_needs=[],
         passes="bits per byte below a measured threshold, and samples", program="milestone_gpt_subwords",
         ranks=0, waits="18 (issue 33)"),
    dict(name="flash", year="2022", title="flash attention: exact attention in memory linear in N",
         modules=BASICS + ["12", "13"], data="random queries, keys and values", data_needs=[],
         passes="exact at N = 16,384 with a measured peak far below the N x N scores, growing like N",
         program="milestone_flash", ranks=0),
    dict(name="small-fast", year="2023", title="small and fast: an int8 GPT",
         modules=ATTENTION + ["20"], data="digit reversal", data_needs=[],
         passes="int8 GPT >= 99%, 4x smaller", program="milestone_small_fast", ranks=0,
         waits="20 (issue 35)"),
]

VERDICT = re.compile(r"^(PASS|FAIL): (.*)$")


class MilestoneError(Exception):
    pass


def find(name):
    for m in MILESTONES:
        if m["name"] == name:
            return m
    names = ", ".join(m["name"] for m in MILESTONES)
    raise MilestoneError(f"there is no milestone '{name}'; the milestones are: {names}")


def runnable(m):
    return "waits" not in m


def module_span(modules):
    """"01-08, 10-12, 14": runs of consecutive module numbers."""
    nums = sorted(int(n) for n in modules)
    spans, start = [], None
    for i, n in enumerate(nums):
        if start is None:
            start = n
        if i + 1 == len(nums) or nums[i + 1] != n + 1:
            spans.append(f"{start:02d}" if start == n else f"{start:02d}-{n:02d}")
            start = None
    return ", ".join(spans)


def exercises_dir(root):
    """Where the learner's copies are: TT_EXERCISES_DIR (as tools/tt exercise uses it), else
    ROOT/exercises."""
    return os.environ.get("TT_EXERCISES_DIR") or os.path.join(root, "exercises")


def shown(root, path):
    """A path as messages show it: relative to the project when inside it (exercises/01)."""
    return exercise.copy_prefix(root, path)


def copies(root, m):
    """{module: copy folder} of the learner's exercise copies of the modules `m` needs."""
    found = {}
    for nn in m["modules"]:
        copy = os.path.join(exercises_dir(root), nn)
        if os.path.isdir(copy):
            found[nn] = copy
    return found


def whose_code(root, m):
    """One line per module: the learner's copy or the library."""
    have = copies(root, m)
    if not have:
        return [f"code: the library's own (the reference) for modules {module_span(m['modules'])}; "
                "an exercise copy (tools/tt exercise NN) puts your code in its place"]
    yours = ", ".join(shown(root, have[nn]) for nn in sorted(have))
    ref = [nn for nn in m["modules"] if nn not in have]
    lines = [f"code: yours for module{'s' if len(have) > 1 else ''} {module_span(list(have))} ({yours})"]
    if ref:
        lines.append(f"      the library's (reference) for modules {module_span(ref)}")
    return lines


def stubs_left(root, m):
    """[(module, region, place)] of stubs still in the learner's copies of the modules `m` needs."""
    left = []
    for nn, copy in sorted(copies(root, m).items()):
        for region, place in exercise.remaining_stubs(root, copy, nn):
            left.append((nn, region, place))
    return left


def plan(root, m):
    """"tree" when the learner's code runs, "reference" otherwise. MilestoneError names a stub left."""
    if not runnable(m):
        raise MilestoneError(f"milestone {m['name']} needs module {m['waits']}, which does not exist yet")
    left = stubs_left(root, m)
    if left:
        nn, region, place = left[0]
        copy = shown(root, copies(root, m)[nn])
        more = f" (and {len(left) - 1} more stub{'s' if len(left) > 2 else ''})" if len(left) > 1 else ""
        raise MilestoneError(
            f"milestone {m['name']} runs your code, and module {nn}'s `{region.function}` is still a stub at "
            f"{copy}/{place} (step {region.order} of {region.total}){more}. Write it and pass "
            f"`tools/tt exercise {nn}` first, or remove {copy} to run the reference.")
    return "tree" if copies(root, m) else "reference"


# --- the tree of the learner's code ---------------------------------------------------------------

TREE_EXTRA = ["examples", "milestones"]  # beside exercise.COPIED: the programs and their headers


def learner_body(copy, region, regions):
    """The learner's lines between region's markers in their copy (its own file, or the unit a
    header's bodies moved to), re-indented to the library's indent. The copy's markers of the
    region's module in that file must be as many as the library's, or which body is which cannot be
    told: then MilestoneError."""
    same_file = sorted((r for r in regions if r.rel == region.rel), key=lambda r: r.begin)
    markers = []
    for rel in (region.rel, exercise.moved_rel(region.rel)):
        try:
            lines = exercise.read_lines(os.path.join(copy, rel))
        except FileNotFoundError:
            continue
        markers += [(rel, lines, i) for i, line in enumerate(lines)
                    if (mk := exercise.BEGIN.match(line)) and f"{int(mk.group(2)):02d}" == region.module]
    if len(markers) != len(same_file):
        raise MilestoneError(
            f"{copy}: {region.rel} has {len(same_file)} region(s) of module {region.module} in the library but "
            f"{len(markers)} TT_EXERCISE_BEGIN({region.module}) marker(s) in your copy; put the markers back "
            f"around each body (or start over with tools/tt exercise {region.module} --reset)")
    rel, lines, begin = markers[same_file.index(region)]
    end = next((i for i in range(begin + 1, len(lines)) if exercise.END.match(lines[i])), None)
    if end is None:
        raise MilestoneError(f"{copy}/{rel}:{begin + 1}: `{region.function}`'s region has no TT_EXERCISE_END")
    indent = lines[begin][:len(lines[begin]) - len(lines[begin].lstrip())]
    body = lines[begin + 1:end]
    return [region.indent + b[len(indent):] if b.startswith(indent) else b for b in body]


def compose(root, dest, m):
    """Writes the library into dest (exercise.COPIED and TREE_EXTRA) with each region of the modules
    that have a copy replaced by the learner's text. Files are written only when they change."""
    plan(root, m)
    replaced = {}  # rel -> lines
    for nn, copy in sorted(copies(root, m).items()):
        regions = exercise.module_regions(root, nn)
        for r in regions:
            replaced.setdefault(r.rel, [])
            replaced[r.rel].append((r, learner_body(copy, r, regions)))
    written = {}
    for rel, pairs in replaced.items():
        lines = exercise.read_lines(os.path.join(root, rel))
        for r, body in sorted(pairs, key=lambda p: p[0].begin, reverse=True):  # last first: lines stay valid
            lines[r.begin + 1:r.end] = body
        written[rel] = "".join(lines).encode("utf-8")
    files = list(exercise.copied_files(root, exercise.COPIED + TREE_EXTRA))
    for rel in files:
        data = written.get(rel)
        if data is None:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        exercise.write_if_changed(os.path.join(dest, rel), data)
    # A file the library no longer has (moved or deleted since the last run) must go too: CMake
    # globs the sources, so a stale copy would be compiled beside its new place.
    keep = set(files)
    for top in exercise.COPIED + TREE_EXTRA:
        path = os.path.join(dest, top)
        if os.path.isfile(path) or not os.path.isdir(path):
            continue
        for dirpath, _, filenames in os.walk(path):
            for fname in filenames:
                rel = os.path.relpath(os.path.join(dirpath, fname), dest)
                if rel not in keep:
                    os.remove(os.path.join(dirpath, fname))


# --- verdicts for tt status ------------------------------------------------------------------------

def code_label(root, m):
    """"yours: 01, 04" or "reference": whose code a run used, for `tt status`."""
    have = copies(root, m)
    return f"yours: {module_span(list(have))}" if have else "reference"


def record(root, build_dir, name, log, rc, seconds):
    code = code_label(root, find(name))
    line = ""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for text in f:
                if VERDICT.match(text.strip()):
                    line = text.strip()
    except OSError:
        pass
    if not line:  # --help, a bad flag, an error before the end: no verdict to keep
        return None, f"no verdict line (exit status {rc}): nothing recorded"
    state = "passed" if rc == 0 and line.startswith("PASS") else "failed"
    if state == "failed" and line.startswith("PASS"):
        line = f"{line} (but the program exited with status {rc})"
    status_dir = os.path.join(build_dir, "tt-status")
    os.makedirs(status_dir, exist_ok=True)
    exercise.write_json(os.path.join(status_dir, f"milestone-{name}.json"),
                        {"state": state, "verdict": line, "code": code, "seconds": round(seconds, 1),
                         "time": datetime.datetime.now().isoformat(timespec="seconds")})
    return state, line


def last_verdict(build_dir, name):
    return exercise.read_json(os.path.join(build_dir, "tt-status", f"milestone-{name}.json"))


def describe_verdict(state):
    """"not yet", "passed: 97.2% >= 95% (yours: 01-08)", "failed: ..."."""
    if not state:
        return "not yet"
    number = re.sub(r"^(PASS|FAIL): ", "", state.get("verdict", ""))
    return f"{state.get('state', '?')}: {number} ({state.get('code', '?')})"


def table_lines(root, build_dir):
    rows = []
    for m in MILESTONES:
        state = "waits for module " + m["waits"] if not runnable(m) else describe_verdict(last_verdict(build_dir, m["name"]))
        rows.append((m["name"], m["year"], module_span(m["modules"]), state, m["title"]))
    head = ("milestone", "year", "modules", "last run", "")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(3)]
    out = []
    for r in [head] + rows:
        out.append(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}")
    return out


def next_to_run(root, build_dir):
    """The first runnable milestone that has not passed, or None."""
    for m in MILESTONES:
        state = last_verdict(build_dir, m["name"])
        if runnable(m) and (state or {}).get("state") != "passed":
            return m["name"]
    return None


def list_milestones(root, build_dir, out=sys.stdout):
    for m in MILESTONES:
        print(f"{m['name']:<14} {m['year']:<6} {m['title']}", file=out)
        print(f"{'':<21} needs modules {module_span(m['modules'])}; data: {m['data']}", file=out)
        print(f"{'':<21} passes when: {m['passes']}", file=out)
        if not runnable(m):
            print(f"{'':<21} waits for module {m['waits']}", file=out)
        else:
            print(f"{'':<21} last run: {describe_verdict(last_verdict(build_dir, m['name']))}", file=out)
    print("\nrun one with tools/tt milestone run NAME, or all of them with tools/tt milestone run all", file=out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list")
    p.add_argument("root")
    p.add_argument("build_dir")
    p = sub.add_parser("names")
    p.add_argument("root")
    p.add_argument("name", nargs="?", default="all")
    for command in ("describe", "plan", "ranks", "program"):
        p = sub.add_parser(command)
        p.add_argument("root")
        p.add_argument("name")
    p = sub.add_parser("compose")
    p.add_argument("root")
    p.add_argument("dest")
    p.add_argument("name")
    p = sub.add_parser("packages")
    p.add_argument("root")
    p.add_argument("names", nargs="+")
    p = sub.add_parser("record")
    p.add_argument("root")
    p.add_argument("build_dir")
    p.add_argument("name")
    p.add_argument("log")
    p.add_argument("rc", type=int)
    p.add_argument("seconds", type=float)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            list_milestones(args.root, args.build_dir)
        elif args.command == "names":
            if args.name == "all":
                print("\n".join(m["name"] for m in MILESTONES if runnable(m)))
            else:
                m = find(args.name)
                if not runnable(m):
                    raise MilestoneError(f"milestone {m['name']} needs module {m['waits']}, which does not exist yet")
                print(m["name"])
        elif args.command == "describe":
            m = find(args.name)
            print(f"=== milestone {m['name']}: {m['year']}, {m['title']}")
            print(f"needs: modules {module_span(m['modules'])}; data: {m['data']}")
            print(f"passes when: {m['passes']}")
            print("\n".join(whose_code(args.root, m)))
        elif args.command == "plan":
            print(plan(args.root, find(args.name)))
        elif args.command == "ranks":
            print(find(args.name)["ranks"])
        elif args.command == "program":
            print(find(args.name)["program"])
        elif args.command == "compose":
            compose(args.root, args.dest, find(args.name))
        elif args.command == "packages":
            needed = []
            for name in args.names:
                for path, package in find(name)["data_needs"]:
                    if package not in needed:
                        needed.append(package)
            print(" ".join(needed))
        else:
            _, line = record(args.root, args.build_dir, args.name, args.log, args.rc, args.seconds)
            print(line)
    except (MilestoneError, exercise.ExerciseError) as e:
        print(f"milestone: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
