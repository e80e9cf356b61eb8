#!/usr/bin/env python3
"""house.py: measures the house, that is which top-level folder of the library includes which.

It reads every .h/.cpp/.cu/.cuh file under tinytorch/ (the working tree, or a commit with --rev),
collects each `#include "tinytorch/<folder>/..."` line (and any quoted include that resolves to a
library file relative to the including file), and counts the include lines per ordered pair of
folders. Against a declared order of layers (LAYERS below, lowest first) it reports:

  * the upward edges: a file in one folder that includes a folder on a higher layer, each with
    its file:line, grouped by folder pair;
  * the knot: the strongly connected components of the folder graph (folders that all reach one
    another through includes), with the lines of code of the largest and its share of the library.

    tools/house.py                         the report, for people
    tools/house.py --json                  the same data as JSON
    tools/house.py --check [--allow FILE]  exit 1 when an upward edge is not in FILE (or a folder has
                                           no layer); prints what fails and a verdict line
    tools/house.py --rev 49fc937           measure a commit instead of the working tree
    tools/house.py --order design          judge against the layers ../shared/DESIGN.md draws (see LAYERS)
    tools/house.py --order 'core < backend < ops autograd < nn'   any other order

An allowlist holds one edge pattern per line, `FROM -> TO`, with # comments. FROM is a folder
(`core`) or a file path from the repository root (`tinytorch/core/tensor.cpp`); TO is a folder
(`ops`) or the included path as written (`tinytorch/ops/ops.h`). An upward include is allowed when
some line matches both of its ends. Lines that match nothing are reported as stale.

Lines of code are physical lines (what `wc -l` counts, plus a last line without a newline), of
all source files, comments and blank lines included. Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

SOURCE_EXTENSIONS = (".h", ".cpp", ".cu", ".cuh")

# Files directly in the library folder (the umbrella tinytorch.h) form this pseudo-folder. It sits
# above every layer: it may include anything, and nothing in the library should include it.
ROOT_FOLDER = "(root)"

# The intended layers, lowest first; folders on one line share a layer and may include one another.
#
# Where it comes from. The design notes (../shared/DESIGN.md, outside this repository), under
# "Layers, with one-way dependencies", draw three levels:
# backend/ at the bottom ("knows nothing about autograd"), ops/ + autograd/ above it, and
# nn/ optim/ data/ io/ amp/ distributed/ on top ("compose ops only"). core/ (Tensor, Storage,
# dtype, device, error) is in DESIGN.md's layout but not in the diagram; backend/ includes it
# everywhere, so it goes underneath. Issue 31 ("Layers one way") refines the middle: after the
# registries, no file of core/, autograd/ or backend/ includes a folder above it, and "autocast's
# casts do not climb back into ops/", i.e. ops/ consult amp/ (autocast's policy) and not the other
# way round. So autograd/ sits below ops/, and amp/ below ops/ too: amp/ holds autocast's policy
# and per-thread state (core/ only), the hook that casts is ops/autocast_hook.*, and autograd's
# engine turns autocast off for a backward pass, so amp/ goes under autograd/.
#
# The one disagreement: DESIGN.md draws amp/ on the top layer, above ops/. The code and the issue
# put autocast under ops/ (six op families ask it what dtype to run in), and an autocast that must
# intercept tt::matmul cannot sit above the function it intercepts. This order follows the issue;
# `--order design` measures the diagram as drawn.
#
# viz/ (images, plots) is in neither document; it includes core/ only and goes with the top
# layer. text/, profiler/ and quant/ are in DESIGN.md's layout and do not exist yet.
LAYERS = [
    ["core"],
    ["backend"],
    ["amp"],
    ["autograd"],
    ["ops"],
    ["nn", "optim", "data", "io", "viz", "distributed", "text", "profiler", "quant"],
]

# DESIGN.md's diagram taken literally (core/ below it, as above).
DESIGN_LAYERS = [
    ["core"],
    ["backend"],
    ["autograd", "ops"],
    ["nn", "optim", "data", "io", "amp", "distributed", "viz", "text", "profiler", "quant"],
]

PRESETS = {"intended": LAYERS, "design": DESIGN_LAYERS}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


class UsageError(Exception):
    """A bad argument or allowlist: reported on stderr, exit status 2."""


# --- reading the tree ----------------------------------------------------------------------------

def read_worktree(root, lib):
    """(path from root, text) of every source file under root/lib, sorted by path."""
    base = os.path.join(root, lib)
    if not os.path.isdir(base):
        raise UsageError(f"house: no library folder {base}")
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_EXTENSIONS):
                full = os.path.join(dirpath, name)
                with open(full, encoding="utf-8", errors="replace") as f:
                    files.append((os.path.relpath(full, root).replace(os.sep, "/"), f.read()))
    return sorted(files)


def read_revision(root, lib, rev):
    """The same as read_worktree, from commit `rev` of the git repository at root."""
    def git(*args, data=None):
        result = subprocess.run(["git", "-C", root, *args], input=data, capture_output=True)
        if result.returncode != 0:
            raise UsageError(f"house: git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
        return result.stdout

    listing = git("ls-tree", "-r", "--name-only", rev, "--", lib + "/").decode().splitlines()
    paths = sorted(p for p in listing if p.endswith(SOURCE_EXTENSIONS))
    if not paths:
        raise UsageError(f"house: commit {rev} has no source files under {lib}/")
    # One `git cat-file --batch` for all of them: "<sha> blob <size>\n<bytes>\n" per request.
    out = git("cat-file", "--batch", data="".join(f"{rev}:{p}\n" for p in paths).encode())
    files, pos = [], 0
    for path in paths:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        body = out[header_end + 1:header_end + 1 + size]
        files.append((path, body.decode("utf-8", errors="replace")))
        pos = header_end + 1 + size + 1
    return files


# --- scanning ------------------------------------------------------------------------------------

def folder_of(path, lib):
    """The top-level library folder of a path from the root ("tinytorch/ops/x.h" -> "ops")."""
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != lib:
        return None
    return parts[1] if len(parts) > 2 else ROOT_FOLDER


def code_lines(text):
    """Each line with its comments removed (// and /* */), so an include in a comment is not read."""
    lines, in_block = [], False
    for line in text.split("\n"):
        kept, i = [], 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block, i = False, end + 2
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            elif line.startswith("//", i):
                break
            elif line[i] == '"':  # a string literal: copy it whole, so "//" inside it is kept
                end = i + 1
                while end < len(line) and line[end] != '"':
                    end += 2 if line[end] == "\\" else 1
                kept.append(line[i:end + 1])
                i = end + 1
            else:
                kept.append(line[i])
                i += 1
        lines.append("".join(kept))
    return lines


def count_lines(text):
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def scan(files, lib):
    """The folders (files, lines) and every include of one library file from another.

    An include is a dict: file, line, text (the path as written), src and dst (folders), kind
    ("library": spelled from the library's name; "relative": resolved from the including file).
    """
    paths = {path for path, _ in files}
    folders, includes = {}, []
    for path, text in files:
        src = folder_of(path, lib)
        entry = folders.setdefault(src, {"files": 0, "lines": 0})
        entry["files"] += 1
        entry["lines"] += count_lines(text)
        for number, line in enumerate(code_lines(text), start=1):
            match = INCLUDE_RE.match(line)
            if not match:
                continue
            quote, written = match.groups()
            if written.startswith(lib + "/"):
                dst, kind = folder_of(written, lib), "library"
            elif quote == '"':
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), written)).replace(os.sep, "/")
                if resolved not in paths:
                    continue  # a system or third-party header found through the include path
                dst, kind = folder_of(resolved, lib), "relative"
            else:
                continue
            includes.append({"file": path, "line": number, "text": written, "src": src, "dst": dst, "kind": kind})
    return folders, includes


# --- the folder graph ----------------------------------------------------------------------------

def edge_counts(includes):
    """{(src, dst): number of include lines} over pairs of different folders."""
    counts = {}
    for inc in includes:
        if inc["src"] != inc["dst"]:
            key = (inc["src"], inc["dst"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def strongly_connected(nodes, edges):
    """Tarjan's algorithm: the strongly connected components of the graph, each sorted, largest first."""
    successors = {n: sorted({d for (s, d) in edges if s == n}) for n in nodes}
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in successors[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for n in sorted(nodes):  # a dozen folders: recursion depth is no concern
        if n not in index:
            visit(n)
    return sorted(components, key=lambda c: (-len(c), c))


def parse_order(spec):
    """'core < backend < ops autograd < nn,optim' (or a preset name) -> list of layers."""
    if spec in PRESETS:
        return [list(layer) for layer in PRESETS[spec]]
    layers = [[f for f in re.split(r"[\s,/]+", part) if f] for part in spec.split("<")]
    if not all(layers):
        raise UsageError(f"house: --order has an empty layer: {spec!r}")
    seen = [f for layer in layers for f in layer]
    if len(seen) != len(set(seen)):
        raise UsageError(f"house: --order names a folder twice: {spec!r}")
    return layers


def rank_of(layers):
    ranks = {folder: r for r, layer in enumerate(layers) for folder in layer}
    ranks[ROOT_FOLDER] = len(layers)
    return ranks


# --- the allowlist -------------------------------------------------------------------------------

def read_allowlist(path):
    """[(from, to, line number, text)] from a file of `FROM -> TO` lines."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split("->")]
            if len(parts) != 2 or not all(parts):
                raise UsageError(f"house: {path}:{number}: expected `FROM -> TO`, got {raw.strip()!r}")
            entries.append((parts[0], parts[1], number, line))
    return entries


def allowed_by(inc, entry):
    frm, to = entry[0], entry[1]
    return frm in (inc["src"], inc["file"]) and to in (inc["dst"], inc["text"])


# --- the measurement -----------------------------------------------------------------------------

def measure(files, lib, layers, allowlist=()):
    folders, includes = scan(files, lib)
    ranks = rank_of(layers)
    counts = edge_counts(includes)
    nodes = set(folders) | {d for (_, d) in counts}
    for n in nodes:
        folders.setdefault(n, {"files": 0, "lines": 0})
    for name, entry in folders.items():
        entry["rank"] = ranks.get(name)

    upward, used = [], set()
    for inc in includes:
        rs, rd = ranks.get(inc["src"]), ranks.get(inc["dst"])
        if rs is None or rd is None or rd <= rs:
            continue
        hits = [i for i, e in enumerate(allowlist) if allowed_by(inc, e)]
        used.update(hits)
        upward.append(dict(inc, allowed=bool(hits)))

    total = sum(f["lines"] for f in folders.values())
    components = strongly_connected(nodes, counts)
    knots = [c for c in components if len(c) > 1]
    knots.sort(key=lambda c: -sum(folders[f]["lines"] for f in c))

    def knot_summary(c):
        lines = sum(folders[f]["lines"] for f in c)
        return {"folders": c, "lines": lines, "share": lines / total if total else 0.0}

    return {
        "lib": lib,
        "layers": layers,
        "folders": {name: folders[name] for name in sorted(folders, key=lambda n: (ranks.get(n, 99), n))},
        "total_lines": total,
        "total_files": sum(f["files"] for f in folders.values()),
        "edges": [{"from": s, "to": d, "count": n} for (s, d), n in sorted(counts.items())],
        "relative_includes": [i for i in includes if i["kind"] == "relative"],
        "same_folder_includes": sum(1 for i in includes if i["src"] == i["dst"]),
        "upward": upward,
        "unranked": sorted(n for n in nodes if n not in ranks),
        "components": components,
        "knots": [knot_summary(c) for c in knots],
        "stale_allow": [f"line {e[2]}: {e[3]}" for i, e in enumerate(allowlist) if i not in used],
    }


# --- output --------------------------------------------------------------------------------------

def order_text(layers):
    return " < ".join(" ".join(layer) for layer in layers)


def group_upward(upward):
    groups = {}
    for inc in upward:
        groups.setdefault((inc["src"], inc["dst"]), []).append(inc)
    return groups


def report(m, where):
    out = []
    say = out.append
    say(f"house of {m['lib']}/ at {where}: {m['total_files']} files, {m['total_lines']:,} lines")
    say(f"layers, lowest first: {order_text(m['layers'])}")
    say(f"  files directly in {m['lib']}/ (the umbrella header) count as folder {ROOT_FOLDER}, above every layer")
    say("")
    say("folder        layer  files    lines  includes (other folders: include lines)")
    for name, f in m["folders"].items():
        outgoing = ", ".join(f"{e['to']} {e['count']}" for e in m["edges"] if e["from"] == name)
        rank = "-" if f["rank"] is None else str(f["rank"])
        say(f"  {name:<12}{rank:>4}{f['files']:>7}{f['lines']:>9,}  {outgoing or '-'}")
    say(f"  ({m['same_folder_includes']} include lines stay inside their folder; "
        f"{len(m['relative_includes'])} are relative paths)")
    for inc in m["relative_includes"]:
        say(f"    relative: {inc['file']}:{inc['line']}  \"{inc['text']}\"")
    if m["unranked"]:
        say(f"  folders on no layer (add them to LAYERS): {', '.join(m['unranked'])}")
    say("")

    groups = group_upward(m["upward"])
    say(f"upward includes: {len(m['upward'])} lines in {len(groups)} folder pairs")
    for (src, dst), incs in sorted(groups.items(), key=lambda kv: (m["folders"][kv[0][0]]["rank"], kv[0])):
        rs, rd = m["folders"][src]["rank"], m["folders"][dst]["rank"]
        say(f"  {src} -> {dst} (layer {rs} -> {rd}): {len(incs)}")
        for inc in incs:
            mark = "  (allowed)" if inc["allowed"] else ""
            say(f"    {inc['file']}:{inc['line']}  {inc['text']}{mark}")
    say("")

    if m["knots"]:
        say("strongly connected folders (each reaches every other through includes):")
        for k in m["knots"]:
            say(f"  {' '.join(k['folders'])}: {len(k['folders'])} folders, {k['lines']:,} lines, "
                f"{100 * k['share']:.1f}% of the library")
        big = m["knots"][0]
        say(f"the knot: {big['lines']:,} of {m['total_lines']:,} lines ({100 * big['share']:.1f}%)")
    else:
        say("no strongly connected folders: the folder graph has no cycle")
    if m["stale_allow"]:
        say("")
        say("allowlist lines that match no upward include (stale):")
        for s in m["stale_allow"]:
            say(f"  {s}")
    return "\n".join(out)


def check_text(m):
    out = []
    bad = [inc for inc in m["upward"] if not inc["allowed"]]
    for inc in bad:
        out.append(f"{inc['file']}:{inc['line']}: {inc['src']} includes {inc['dst']}, a higher layer "
                   f"({inc['text']})")
    for name in m["unranked"]:
        out.append(f"house: folder {name}/ is on no layer; put it in LAYERS in tools/house.py")
    for s in m["stale_allow"]:
        out.append(f"house: stale allowlist entry, {s}")
    verdict_ok = not bad and not m["unranked"]
    allowed = sum(1 for inc in m["upward"] if inc["allowed"])
    if verdict_ok:
        out.append(f"house: OK, no upward include outside the allowlist ({allowed} allowed)")
    else:
        out.append(f"house: FAIL, {len(bad)} upward includes not in the allowlist"
                   + (f", {len(m['unranked'])} folders on no layer" if m["unranked"] else ""))
    return "\n".join(out), verdict_ok


def main(argv=None):
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=default_root, help="the repository (default: this script's ..)")
    p.add_argument("--lib", default="tinytorch", help="the library folder under the root")
    p.add_argument("--rev", help="measure this commit (git) instead of the working tree")
    p.add_argument("--order", default="intended",
                   help="the layers: a preset (intended, design) or 'a < b c < d', lowest first")
    p.add_argument("--allow", help="allowlist file of `FROM -> TO` lines")
    p.add_argument("--json", action="store_true", help="print the measurement as JSON")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when an upward include is not allowed or a folder is on no layer")
    args = p.parse_args(argv)
    try:
        layers = parse_order(args.order)
        allowlist = read_allowlist(args.allow) if args.allow else []
        if args.rev:
            files = read_revision(args.root, args.lib, args.rev)
        else:
            files = read_worktree(args.root, args.lib)
    except (UsageError, OSError) as e:
        print(e, file=sys.stderr)
        return 2
    m = measure(files, args.lib, layers, allowlist)
    text, ok = check_text(m)
    if args.json:
        m["check"] = {"ok": ok}
        print(json.dumps(m, indent=1))
    elif args.check:
        print(text)
    else:
        print(report(m, f"commit {args.rev}" if args.rev else "the working tree"))
    return 0 if (ok or not args.check) else 1


if __name__ == "__main__":
    sys.exit(main())
