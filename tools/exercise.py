#!/usr/bin/env python3
"""Exercise mode and progress for tools/tt: stubbed copies of the library, run summaries, `tt status`.

The library marks the code a learner of module NN writes with two comment lines inside a
function body:

    // TT_EXERCISE_BEGIN(NN)       or, with the recommended step K (1 = write it first):
    // TT_EXERCISE_BEGIN(NN, K)
    ... the body ...
    // TT_EXERCISE_END

`make` copies the project (the paths in COPIED) into a destination folder and replaces the lines
between the markers of module NN with a statement that throws (`__trap()` inside CUDA device
code, where a throw does not compile), keeping the markers so the learner sees where to write.
The stub's message names the function, the region's place in the library (file:line of its BEGIN
marker), its step and the module's README, so a failing test says which stub stopped it. A
stubbed file also gets `#pragma GCC diagnostic` lines for the warnings a stub causes (unused
parameters): the copy is then compiled with exactly the main build's flags, and ccache serves
every file that is not stubbed. A file is written only when its content changes, so re-stubbing
one region at a time rebuilds one translation unit. Standard library only.

The recommended order: regions with a step K by K (a K used twice in a module is an error), then
the regions without one in file order. `list` prints them in that order.

    exercise.py list ROOT NN [--copy COPY]        (with COPY: where each region is in that copy)
    exercise.py make ROOT DEST NN [--only I]      (I: 1-based index into `list`; 0 stubs nothing)
    exercise.py solve ROOT COPY NN --only I       (write region I's library body over its stub)
    exercise.py summary ROOT COPY NN JUNIT        (after a run: which stub blocked which case)
    exercise.py record JUNIT STATUS_DIR           (after `tt test`: each module suite's state)
    exercise.py status ROOT BUILD_DIR             (`tt status`)
"""

import argparse
import datetime
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

COPIED = ["CMakeLists.txt", "cmake", "tinytorch", "tests", "modules"]
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
BEGIN = re.compile(r"^(\s*)//\s*TT_EXERCISE_BEGIN\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)\s*$")
END = re.compile(r"^\s*//\s*TT_EXERCISE_END\s*$")
ERROR_INCLUDE = '#include "tinytorch/core/error.h"'
# What a stub's message looks like; `summary` finds it in a failing test's output.
STUB_MESSAGE = re.compile(r"exercise (\d+): stub of `([^`]+)` (?:at \S+ )?\((?:library: )?([^)]+)\)")
# Where a stub's message says it is, until the copy's layout is known (make() puts the line in).
WHERE = "\x00where\x00"
# The warnings a stub causes in its own file: its parameters and the helpers only it called go
# unused, and a caller of a function that now always throws can look like infinite recursion to
# GCC. Silenced in stubbed files only, so the compile flags stay the main build's (-Werror
# included); -Wpragmas first, so that a compiler that lacks one of these does not warn about it.
STUB_WARNINGS = ["-Wpragmas", "-Wunused-parameter", "-Wunused-function", "-Wunused-variable",
                 "-Wunused-but-set-variable", "-Winfinite-recursion"]


class ExerciseError(Exception):
    pass


class Region:
    """One TT_EXERCISE region: its file, its marker lines (0-based), the step K it asks for (or
    None), the function it sits in, and, once ordered, its place in the recommended order."""

    def __init__(self, rel, module, begin, end, indent, step, function):
        self.rel, self.module, self.begin, self.end = rel, module, begin, end
        self.indent, self.step, self.function = indent, step, function
        self.order = 0  # 1-based place in the recommended order
        self.total = 0  # regions in the module

    @property
    def location(self):
        return f"{self.rel}:{self.begin + 1}"

    def stub_id(self):
        """The part of the stub's message that identifies it, wherever the copy keeps the stub: the
        region's place in the library."""
        return f"(library: {self.location})"

    def old_stub_id(self):
        """stub_id of copies made before stubs said where they are in the copy."""
        return f"stub of `{self.function}` ({self.location})"

    def message(self, readme, where=WHERE):
        """The stub's text: `where` is the stub's own file:line in the learner's copy."""
        return (f"exercise {self.module}: stub of `{self.function}` at {where} {self.stub_id()}, step {self.order} "
                f"of {self.total} \u2014 write its body there; see {readme}")


def module_dir_name(root, module):
    """modules/NN_name for module NN, as `NN_name`."""
    names = sorted(n for n in os.listdir(os.path.join(root, "modules")) if n.startswith(module + "_"))
    if not names:
        raise ExerciseError(f"there is no module {module} under {root}/modules")
    return names[0]


def copied_files(root, tops=None):
    """Every file of `tops` (default COPIED), as paths relative to root."""
    for top in COPIED if tops is None else tops:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                yield os.path.relpath(os.path.join(dirpath, name), root)


# --- which function a region sits in ---------------------------------------------------------------

def scope_headers(lines, stop):
    """The headers of the braces still open before line `stop`, outermost first: for each `{`,
    the code since the previous `;`, `{` or `}` (comments, strings and preprocessor lines left
    out). `void f(int a) {` gives "void f(int a)", `struct S {` gives "struct S"."""
    return [header for header, _, _ in open_scopes(lines, stop)]


LAMBDA = re.compile(r"\[[^\[\]]*\]\s*(\([^()]*(\([^()]*\)[^()]*)*\))?\s*(mutable\s*)?(constexpr\s*)?"
                    r"(noexcept\s*)?(->\s*[\w:<>,\s*&]+)?$")
CONTROL = re.compile(r"^(else|do|try)\b|^(if|for|while|switch|catch)\s*\(|^(case\b.*|default\s*):$|=$|^return\b")
CLASS = re.compile(r"\b(struct|class|union)\s+(?:alignas\s*\([^)]*\)\s*)?(\w+)\s*(final\s*)?(:[^(]*)?$")
FUNCTION_NAME = re.compile(r"((?:[A-Za-z_]\w*\s*(?:<[^()]*>)?\s*::\s*)*"
                           r"(?:operator\s*(?:\(\s*\)|[^\s(]+)|~?[A-Za-z_]\w*))\s*\(")


def enclosing_function(lines, begin):
    """The name of the function whose body holds line `begin` (`Class::name` for a member, the
    enclosing function for a lambda), or None."""
    name, classes = None, []
    for header in reversed(scope_headers(lines, begin)):
        header = re.sub(r"^(public|private|protected)\s*:\s*", "", header)
        header = re.sub(r"^template\s*<.*?>\s*", "", header)
        if header.startswith(("namespace", "extern")):
            break
        if not header or LAMBDA.search(header) or CONTROL.search(header):
            continue
        cls = CLASS.search(header)
        if cls and "(" not in header:
            classes.insert(0, cls.group(2))
            continue
        if name is None:
            match = FUNCTION_NAME.search(header)
            if match:
                name = re.sub(r"\s+", "", match.group(1))
    if name is None:
        return None
    if classes and "::" not in name:
        name = "::".join(classes + [name])
    return name


# --- regions ---------------------------------------------------------------------------------------

def find_regions(lines, path):
    """[Region] of one file, in file order; checks that markers pair up."""
    regions, open_region = [], None
    for i, line in enumerate(lines):
        begin = BEGIN.match(line)
        if begin:
            if open_region:
                raise ExerciseError(f"{path}:{i + 1}: TT_EXERCISE_BEGIN inside the region opened at "
                                    f"line {open_region[1] + 1}")
            step = int(begin.group(3)) if begin.group(3) is not None else None
            if step is not None and step < 1:
                raise ExerciseError(f"{path}:{i + 1}: step {step} in {line.strip()}: steps count from 1")
            open_region = (f"{int(begin.group(2)):02d}", i, begin.group(1), step)
        elif END.match(line):
            if not open_region:
                raise ExerciseError(f"{path}:{i + 1}: TT_EXERCISE_END without TT_EXERCISE_BEGIN")
            module, start, indent, step = open_region
            regions.append(Region(path, module, start, i, indent, step, enclosing_function(lines, start)))
            open_region = None
        elif "TT_EXERCISE_" in line and line.lstrip().startswith("//"):
            raise ExerciseError(f"{path}:{i + 1}: malformed exercise marker: {line.strip()} "
                                f"(expected TT_EXERCISE_BEGIN(NN), TT_EXERCISE_BEGIN(NN, K) or TT_EXERCISE_END)")
    if open_region:
        raise ExerciseError(f"{path}:{open_region[1] + 1}: TT_EXERCISE_BEGIN without TT_EXERCISE_END")
    return regions


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.readlines()


_ALL_REGIONS = {}  # root -> every region under it, in file order (read once per process)


def module_regions(root, module):
    """Module NN's regions in the recommended order (steps first, by K; then file order)."""
    if root not in _ALL_REGIONS:
        _ALL_REGIONS[root] = [r for rel in copied_files(root) if rel.endswith(SOURCE_EXTENSIONS)
                              for r in find_regions(read_lines(os.path.join(root, rel)), rel)]
    found = [r for r in _ALL_REGIONS[root] if r.module == module]
    by_step = {}
    for r in found:
        if r.step is not None:
            if r.step in by_step:
                raise ExerciseError(f"module {module}: step {r.step} is given twice, at "
                                    f"{by_step[r.step].location} and {r.location}")
            by_step[r.step] = r
    ordered = sorted(by_step.values(), key=lambda r: r.step) + [r for r in found if r.step is None]
    for i, r in enumerate(ordered):
        r.order, r.total = i + 1, len(ordered)
    return ordered


# --- stubs -----------------------------------------------------------------------------------------

def in_device_code(lines, begin, path):
    """True when the region at `begin` sits in a CUDA __global__/__device__ function: the
    function header is the text between the previous top-level `}` or `;` and the region."""
    if not path.endswith((".cu", ".cuh")):
        return False
    header = []
    for line in reversed(lines[:begin]):
        if line.startswith("}") or (line.rstrip().endswith(";") and not line.startswith((" ", "\t"))):
            break
        header.append(line)
    text = " ".join(header)
    return "__global__" in text or ("__device__" in text and "__host__" not in text)


def in_host_device_function(lines, begin):
    """True when the region at `begin` is the body of a TT_HOST_DEVICE function (a header
    function both backends call, such as BFloat16's rounding): its signature is the run of lines
    up to the `{` that opens the body, back to the previous blank line or statement end."""
    signature = []
    for line in reversed(lines[:begin]):
        stripped = line.strip()
        if signature and (not stripped or stripped.endswith((";", "}"))):
            break
        signature.append(stripped)
    text = " ".join(signature)
    return "TT_HOST_DEVICE" in text or ("__host__" in text and "__device__" in text)


def c_string(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def stub_lines(message, indent, device):
    text = c_string(message)
    if device == "both":  # compiled for the host and, under nvcc, for the GPU: a stub for each
        return [f"{indent}#ifdef __CUDA_ARCH__\n", f"{indent}__trap();\n", f"{indent}#else\n",
                f'{indent}throw ::tt::Error("{text}");\n', f"{indent}#endif\n"]
    if device:
        return [f'{indent}printf("{text}\\n");\n', f"{indent}__trap();\n"]
    return [f'{indent}throw ::tt::Error("{text}");\n']


def add_stub_preamble(lines, path, throws):
    """After the last #include of a stubbed file: tt::Error (when a stub throws) and, outside CUDA
    sources, pragmas that silence the stub's own warnings (popped at the end of the file, so a
    stubbed header does not silence its includers)."""
    extra = []
    if throws and not any(line.strip() == ERROR_INCLUDE for line in lines):
        extra.append(ERROR_INCLUDE + "\n")
    pragmas = not path.endswith((".cu", ".cuh"))
    if pragmas:
        extra.append("#pragma GCC diagnostic push  // exercise copy: a stub leaves names unused\n")
        extra += [f'#pragma GCC diagnostic ignored "{w}"\n' for w in STUB_WARNINGS]
    last = max((i for i, line in enumerate(lines) if line.startswith("#include")), default=-1)
    out = lines[:last + 1] + extra + lines[last + 1:]
    if pragmas:
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out.append("#pragma GCC diagnostic pop\n")
    return out


def stub_spans(lines, rel, spans, readme):
    """`lines` with each span (region, begin, end: the 0-based lines of its markers in `lines`)
    replaced by a stub, and the stub preamble added; the stubs' messages still hold WHERE."""
    out, last, throws = [], 0, False
    for r, begin, end in sorted(spans, key=lambda span: span[1]):
        device = in_device_code(lines, begin, rel) or ("both" if in_host_device_function(lines, begin) else False)
        indent = lines[begin][:len(lines[begin]) - len(lines[begin].lstrip())]  # the marker's, where it now is
        out += lines[last:begin + 1]
        out += stub_lines(r.message(readme), indent, device)
        last, throws = end, throws or device is not True
    out += lines[last:]
    return add_stub_preamble(out, rel, throws)


# --- a header's exercise body, moved out of line in the copy ---------------------------------------
# A region in a header (BFloat16::round_to_bits) is compiled by every file that includes it, so each
# edit a learner makes would rebuild most of the library (1.5 to 1.8 minutes on 2 cores). In the
# copy, such a function's body moves to a translation unit of its own, beside the header
# (bfloat16.h -> bfloat16_exercise.cpp, which the library's source glob picks up), and the header
# keeps its declaration: an edit then recompiles one small file. The library itself keeps the body
# inline, where its kernels need it. Functions that cannot be defined out of line as they are
# (templates, constexpr, constructors, static free functions, anything in an unnamed namespace) stay
# where they are.

HEADER_EXTENSIONS = (".h", ".hpp")
# Specifiers an out-of-line definition must drop; of them, the header's declaration keeps static,
# explicit and virtual, and loses those that say inline (TT_HOST_DEVICE is `inline` outside nvcc):
# the body is no longer in the header.
DROPPED_SPECIFIERS = re.compile(r"\b(static|inline|explicit|virtual|TT_HOST_DEVICE|__host__|__device__|"
                                r"__forceinline__)\s+")
INLINE_SPECIFIERS = re.compile(r"\b(inline|TT_HOST_DEVICE|__host__|__device__|__forceinline__)\s+")


def code_chars(lines):
    """(line, column, char) of every character of code: comments, preprocessor lines and the
    insides of string and character literals are left out (a literal counts as one space), and a
    line's end is a space."""
    in_block_comment = False
    for li, line in enumerate(lines):
        i, n = 0, len(line)
        if not in_block_comment and line.lstrip().startswith("#"):
            yield li, n, " "
            continue
        while i < n:
            c = line[i]
            if in_block_comment:
                j = line.find("*/", i)
                if j < 0:
                    break
                in_block_comment, i = False, j + 2
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block_comment, i = True, i + 2
                continue
            if c in "\"'":
                j = i + 1
                while j < n and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                yield li, i, " "
                i = j + 1
                continue
            yield li, i, c if c != "\n" else " "
            i += 1
        yield li, n, " "


def open_scopes(lines, stop):
    """The braces still open before line `stop`, outermost first: (header, start, brace), where
    header is the code since the previous `;`, `{` or `}` (whitespace collapsed), start the
    (line, column) of its first character and brace the (line, column) of the `{`."""
    stack, header, start, depth = [], [], None, 0
    for li, col, c in code_chars(lines):
        if li >= stop:
            break
        if c == "{":
            stack.append((" ".join("".join(header).split()), start, (li, col)))
            header, start, depth = [], None, 0
            continue
        if c == "}":
            if stack:
                stack.pop()
            header, start = [], None
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        if c == ";" and depth == 0:
            header, start = [], None
            continue
        if start is None and not c.isspace():
            start = (li, col)
        header.append(c)
    return stack


def closing_brace(lines, brace):
    """(line, column) of the `}` that closes the `{` at `brace`."""
    depth = 0
    for li, col, c in code_chars(lines):
        if (li, col) < brace:
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return li, col
    raise ExerciseError("unbalanced braces")


def split_top_level(text, sep):
    """`text` split at each `sep` outside (), <>, [] and {}."""
    parts, depth, current = [], 0, []
    for c in text:
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    parts.append("".join(current))
    return parts


def out_of_line_function(lines, begin):
    """For the region at line `begin` of a header: (start, brace, close, definition signature,
    namespaces) of the function whose body holds it, or None when it cannot move out of line."""
    scopes = open_scopes(lines, begin)
    classes, namespaces, function = [], [], None
    for i in range(len(scopes) - 1, -1, -1):
        header, start, brace = scopes[i]
        bare = re.sub(r"^(public|private|protected)\s*:\s*", "", header)
        if bare.startswith("namespace"):
            name = bare[len("namespace"):].strip()
            if not name or any(not part.isidentifier() for part in name.split("::")):
                return None  # an unnamed namespace: nothing outside this header can define its functions
            namespaces.insert(0, name)
            continue
        if bare.startswith("extern") or bare.startswith("template"):
            return None
        if function is None:
            if not bare or LAMBDA.search(bare) or CONTROL.search(bare):
                continue
            if FUNCTION_NAME.search(bare) and not (CLASS.search(bare) and "(" not in bare):
                function = (bare, start, brace)
                continue
            return None
        cls = CLASS.search(bare)
        if not cls or "(" in bare:
            return None  # a function inside a function, or a scope this cannot name
        classes.insert(0, cls.group(2))
    if function is None:
        return None
    signature, start, brace = function
    name_match = FUNCTION_NAME.search(signature)
    name = re.sub(r"\s+", "", name_match.group(1))
    if re.search(r"\b(constexpr|consteval|friend|template)\b", signature) or "::" in name:
        return None
    if classes and name in (classes[-1], "~" + classes[-1]):
        return None  # constructors keep their initializer lists in the header
    if not classes and re.search(r"\bstatic\b", signature):
        return None  # internal linkage: each includer has its own copy
    close = closing_brace(lines, brace)
    # The definition: no specifiers a definition may not repeat, the class-qualified name, no
    # default arguments, no override/final.
    open_paren = name_match.end() - 1
    depth, close_paren = 0, None
    for j in range(open_paren, len(signature)):
        depth += {"(": 1, ")": -1}.get(signature[j], 0)
        if depth == 0:
            close_paren = j
            break
    if close_paren is None:
        return None
    params = [split_top_level(p, "=")[0].strip() for p in split_top_level(signature[open_paren + 1:close_paren], ",")]
    qualified = "::".join(classes + [name])
    head = DROPPED_SPECIFIERS.sub("", signature[:name_match.start(1)])
    tail = re.sub(r"\b(override|final)\b", "", signature[close_paren + 1:]).strip()
    definition = f"{head}{qualified}({', '.join(p for p in params if p)}){(' ' + tail) if tail else ''}"
    return start, brace, close, " ".join(definition.split()), namespaces


def moved_rel(rel):
    """The copy's file that holds the bodies moved out of header `rel`."""
    stem, _ = os.path.splitext(rel)
    return f"{stem}_exercise.cpp"


def move_out_of_line(lines, rel, regions, module):
    """Moves the functions that hold `regions` (of header `rel`) out of line: returns the header's
    new lines, the new translation unit's lines, and [(region, begin, end)] of the regions in the
    unit and of those left in the header (where their markers now are); or None when none can
    move."""
    found = {}
    for r in regions:
        fn = out_of_line_function(lines, r.begin)
        if fn:
            found.setdefault((fn[0], fn[1]), (fn, []))[1].append(r)
    if not found:
        return None
    moved = [r for _, rs in found.values() for r in rs]
    header = list(lines)
    unit = [f"// Exercise copy of module {module}: the exercise bodies of {rel}, moved out of line so that an\n",
            "// edit recompiles this file alone, not every file that includes the header (tools/exercise.py).\n",
            "// The library itself keeps them in the header; tools/tt exercise --reset starts over.\n",
            f'#include "{rel}"\n']
    functions_at = len(unit)  # after the comment and the include
    # Last function first, so that earlier positions stay valid while the header changes.
    for (start, brace, close, definition, namespaces), rs in sorted(found.values(), key=lambda v: v[0][0],
                                                                      reverse=True):
        if brace[0] == close[0]:
            body = [lines[brace[0]][brace[1] + 1:close[1]]]
        else:
            body = [lines[brace[0]][brace[1] + 1:]] + lines[brace[0] + 1:close[0]] + [lines[close[0]][:close[1]]]
        while body and not body[0].strip():  # the rest of the `{` line
            body.pop(0)
        while body and not body[-1].strip():  # the indentation before the `}`
            body.pop()
        indent = len(lines[start[0]]) - len(lines[start[0]].lstrip())
        body = [b[indent:] if b[:indent].isspace() else b for b in body]
        text = ["\n"] + [f"namespace {ns} {{\n" for ns in namespaces] + ["\n", f"{definition} {{\n"]
        text += [b if b.endswith("\n") else b + "\n" for b in body]
        text += ["}\n", "\n"] + [f"}}  // namespace {ns}\n" for ns in reversed(namespaces)]
        # the header keeps the declaration, without `inline` (the body is now elsewhere)
        declaration_head = header[start[0]][:start[1]]
        signature = "".join(header[start[0]:brace[0] + 1])[start[1]:]
        signature = signature[:len(signature) - (len(header[brace[0]]) - brace[1])]
        signature = INLINE_SPECIFIERS.sub("", signature).rstrip()
        rest = header[close[0]][close[1] + 1:]
        new = declaration_head + signature + f";  // exercise copy: the body is in {moved_rel(rel)}" + rest
        header[start[0]:close[0] + 1] = [new if new.endswith("\n") else new + "\n"]
        unit[functions_at:functions_at] = text  # last function first, each before the others: file order
    # The regions' markers in the unit, in order, belong to the moved regions in order.
    markers = find_regions(unit, moved_rel(rel))
    ordered = sorted(moved, key=lambda r: r.begin)
    if len(markers) != len(ordered):
        raise ExerciseError(f"{rel}: moving exercise bodies out of line lost a region")
    spans = [(r, m.begin, m.end) for r, m in zip(ordered, markers)]
    # The markers that stay in the header moved up: each old begin line to its new (begin, end).
    stay_before = [m for m in find_regions(lines, rel) if not any(m.begin == r.begin for r in moved)]
    stay_after = find_regions(header, rel)
    if len(stay_before) != len(stay_after):
        raise ExerciseError(f"{rel}: moving exercise bodies out of line lost a region")
    now = {m.begin: (n.begin, n.end) for m, n in zip(stay_before, stay_after)}
    left = [(r, *now[r.begin]) for r in regions if r not in moved]
    return header, unit, spans, left


def stubbed_files(root, rel, regions, readme, module):
    """{copy path: [lines]} for one source file with `regions` (those of this file to stub)
    replaced by stubs: the file itself and, for a header, the unit its bodies moved to."""
    lines = read_lines(os.path.join(root, rel))
    files = {}
    if rel.endswith(HEADER_EXTENSIONS):
        moved = move_out_of_line(lines, rel, regions, module)
        if moved:
            lines, unit, spans, left = moved
            files[moved_rel(rel)] = stub_spans(unit, moved_rel(rel), spans, readme)
            files[rel] = stub_spans(lines, rel, left, readme) if left else lines
            return files
    files[rel] = stub_spans(lines, rel, [(r, r.begin, r.end) for r in regions], readme)
    return files


def place_stubs(lines, rel, prefix):
    """Puts each stub's own file:line (in the copy: `prefix`/rel) into its message."""
    return [line.replace(WHERE, f"{prefix}/{rel}:{i + 1}") if WHERE in line else line
            for i, line in enumerate(lines)]


def write_if_changed(path, data):
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def readme_path(root, module):
    return f"modules/{module_dir_name(root, module)}/README.md"


def copy_prefix(root, dest):
    """How a stub names the copy: relative to the project (exercises/15) when it lies inside it."""
    rel = os.path.relpath(os.path.abspath(dest), os.path.abspath(root))
    return os.path.abspath(dest) if rel.startswith("..") else rel


def make(root, dest, module, only):
    readme = readme_path(root, module)
    regions = module_regions(root, module)
    if not regions:
        raise ExerciseError(f"module {module} marks no TT_EXERCISE_BEGIN({module}) regions in the library")
    if only is not None and not 0 <= only <= len(regions):
        raise ExerciseError(f"--only {only}: module {module} has {len(regions)} regions")
    chosen = [r for r in regions if only is None or r.order == only]
    by_file = {}
    for r in chosen:
        by_file.setdefault(r.rel, []).append(r)
    prefix = copy_prefix(root, dest)
    written = {}
    for rel, rs in by_file.items():
        for path, lines in stubbed_files(root, rel, rs, readme, module).items():
            written[path] = "".join(place_stubs(lines, path, prefix)).encode("utf-8")
    for rel in copied_files(root):
        data = written.get(rel)
        if data is None:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        write_if_changed(os.path.join(dest, rel), data)
        shutil.copymode(os.path.join(root, rel), os.path.join(dest, rel))
    # A unit of moved bodies exists only while its header's regions are stubbed (--only changes it).
    for rel in sorted({r.rel for r in regions if r.rel.endswith(HEADER_EXTENSIONS)}):
        unit = moved_rel(rel)
        if unit in written:
            write_if_changed(os.path.join(dest, unit), written[unit])
        elif os.path.exists(os.path.join(dest, unit)):
            os.remove(os.path.join(dest, unit))


def solve(root, copy, module, only):
    """Writes region `only`'s library body over its stub in the copy, as a learner who got it right
    would (tools/exercise_loop.py times the edit-to-verdict loop with it)."""
    regions = module_regions(root, module)
    r = next((r for r in regions if r.order == only), None)
    if r is None:
        raise ExerciseError(f"--only {only}: module {module} has {len(regions)} regions")
    found = stub_place_in_copy(copy, r)
    if found is None:
        raise ExerciseError(f"step {only} (`{r.function}`) has no stub in {copy}")
    rel, line = found
    lines = read_lines(os.path.join(copy, rel))
    begin = max(i for i in range(line) if BEGIN.match(lines[i]))
    end = min(i for i in range(line, len(lines)) if END.match(lines[i]))
    body = read_lines(os.path.join(root, r.rel))[r.begin + 1:r.end]
    old_indent, new_indent = r.indent, lines[begin][:len(lines[begin]) - len(lines[begin].lstrip())]
    body = [new_indent + b[len(old_indent):] if b.startswith(old_indent) else b for b in body]
    with open(os.path.join(copy, rel), "w", encoding="utf-8") as f:
        f.write("".join(lines[:begin + 1] + body + lines[end:]))


def list_lines(regions, copy=None, root=None):
    """One line per region: step, function, library place; with `copy`, the place in the copy
    first (where the learner writes it) and the library's after it."""
    width = max(len(f"`{r.function}`") for r in regions)
    lines = []
    for r in regions:
        where = r.location
        if copy is not None:
            found = stub_place_in_copy(copy, r)
            place = f"{found[0]}:{found[1]}" if found else region_place_in_copy(copy, r, regions)
            where = f"{copy_prefix(root, copy)}/{place}  (library: {r.location})"
        lines.append(f"step {r.order:>2}  {('`' + str(r.function) + '`'):<{width}}  {where}")
    return lines


# --- what a copy still stubs -----------------------------------------------------------------------

def stub_place_in_copy(copy, region):
    """(file, 1-based line) of region's stub in the learner's copy, or None once it has been
    written: in its own file, or in the unit its body moved to (a header's)."""
    for rel in (region.rel, moved_rel(region.rel)):
        try:
            lines = read_lines(os.path.join(copy, rel))
        except FileNotFoundError:
            continue
        for i, line in enumerate(lines):
            if region.stub_id() in line or region.old_stub_id() in line:
                return rel, i + 1
    return None


def remaining_stubs(root, copy, module):
    """[(region, "file:line" in the copy)] of the stubs the learner has not replaced yet, in order."""
    out = []
    for r in module_regions(root, module):
        found = stub_place_in_copy(copy, r)
        if found is not None:
            out.append((r, f"{found[0]}:{found[1]}"))
    return out


def region_place_in_copy(copy, region, regions):
    """"file:line" of a written region's BEGIN marker in the copy (its own file or the unit its
    header's bodies moved to), or its library place when the copy's markers no longer say."""
    same_file = sorted((r for r in regions if r.rel == region.rel), key=lambda r: r.begin)
    index = same_file.index(region)
    markers = []
    for rel in (region.rel, moved_rel(region.rel)):
        try:
            lines = read_lines(os.path.join(copy, rel))
        except FileNotFoundError:
            continue
        markers += [(rel, i + 1) for i, line in enumerate(lines)
                    if (m := BEGIN.match(line)) and f"{int(m.group(2)):02d}" == region.module]
    if len(markers) != len(same_file):
        return region.location
    return f"{markers[index][0]}:{markers[index][1]}"


# --- test results ----------------------------------------------------------------------------------

class Case:
    def __init__(self, name, state, output):
        self.name, self.state, self.output = name, state, output  # state: passed, failed, skipped


def read_junit(path):
    """[Case] from CTest's --output-junit file."""
    tree = ET.parse(path)
    cases = []
    for tc in tree.getroot().iter("testcase"):
        status = tc.get("status", "")
        out = tc.find("system-out")
        output = out.text if out is not None and out.text else ""
        if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            state = "failed"
        elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
            state = "skipped"
        else:
            state = "passed"
        cases.append(Case(tc.get("name", "?"), state, output))
    return cases


def suite_module(case_name):
    """`test_05_layers:Linear ...` -> 05, and a suite CTest runs whole (module 16's MPI suite:
    `test_16_distributed_alone`, `test_16_distributed_np2`) -> 16; None for a test outside the
    module suites (`test_core:...`, `readme_05`)."""
    m = re.match(r"test_(\d\d)_\w+?(?::|_alone$|_np\d+$)", case_name)
    return m.group(1) if m else None


def short_name(case_name):
    return case_name.split(":", 1)[1] if ":" in case_name else case_name


def suite_state(cases):
    """What `tt status` records of one run: passed, failed, or "no tests" when nothing ran."""
    failed = sum(c.state == "failed" for c in cases)
    skipped = sum(c.state == "skipped" for c in cases)
    state = "no tests" if not cases else "failed" if failed else "passed"
    return {"state": state, "failed": failed, "skipped": skipped, "total": len(cases),
            "time": datetime.datetime.now().isoformat(timespec="seconds")}


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.write("\n")


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# Where one failure report of Catch begins: "path/test.cpp:123: FAILED:".
CATCH_FAILURE = re.compile(r"^\S.*:\d+: FAILED:\s*$", re.M)


def stub_in(text, keys, regions, module):
    """(function, location) of the first stub message of module NN in `text`, or None. Catch wraps
    long messages (even inside `Linear::backward`), so the text is compared without whitespace."""
    flat = re.sub(r"\s+", "", text)
    found = sorted((flat.find(key), r.order) for key, r in keys if key in flat)
    if found:
        r = next(r for r in regions if r.order == found[0][1])
        return r.function, r.location
    stub = next((m for m in STUB_MESSAGE.finditer(" ".join(text.split())) if m.group(1) == module), None)
    return (stub.group(2), stub.group(3)) if stub else None  # a stub the library no longer marks


def classify(cases, module, regions):
    """Splits the failing cases into {(function, location): [case]}, those whose every failure is
    a stub's exception, and [(case, stub or None)], those with a failure of the learner's own (an
    assertion, a crash, an error that is not a stub's), with the stub they also ran into, if any."""
    keys = [(re.sub(r"\s+", "", key), r) for r in regions for key in (r.stub_id(), r.old_stub_id())]
    blocked, own = {}, []
    for c in cases:
        if c.state != "failed":
            continue
        starts = [m.start() for m in CATCH_FAILURE.finditer(c.output)]
        reports = [c.output[a:b] for a, b in zip(starts, starts[1:] + [len(c.output)])] or [c.output]
        stubs = [stub_in(report, keys, regions, module) for report in reports]
        first_stub = next((s for s in stubs if s), None)
        if first_stub and all(stubs):
            blocked.setdefault(first_stub, []).append(c)
        else:
            own.append((c, first_stub))
    return blocked, own


def plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# The stub text of copies made before stubs named themselves: they cannot be told apart from the
# learner's own errors, so the summary asks for a fresh copy.
OLD_STUB = "exercise {module}: implement this"


def old_style_copy(copy, module):
    """The first file of the copy that still holds a stub of the old kind, or None."""
    key = OLD_STUB.format(module=module)
    for top in ("tinytorch",):
        for dirpath, _, filenames in os.walk(os.path.join(copy, top)):
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTENSIONS):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        if key in f.read():
                            return os.path.relpath(path, copy)
    return None


def step_to_fix(name, history, written):
    """The written step most likely at fault for case `name`, which failed in the learner's code:
    the stub that last blocked it (history: case -> step) when that step is written now, else the
    latest written step before it, else the latest written step. None when nothing is written."""
    orders = sorted(r.order for r in written)
    if not orders:
        return None
    last = history.get(name)
    if last in orders:
        return last
    earlier = [k for k in orders if last is not None and k < last]
    return earlier[-1] if earlier else orders[-1]


def steps_text(orders):
    """[1] -> "Step 1 passes", [1, 2, 4] -> "Steps 1, 2 and 4 pass"."""
    if len(orders) == 1:
        return f"Step {orders[0]} passes"
    return "Steps " + ", ".join(str(k) for k in orders[:-1]) + f" and {orders[-1]} pass"


def summary(root, copy, module, junit, out=None, record_state=True):
    """Prints, after a run of module NN's suite on the copy: each failing case and what stopped
    it, the full output of the cases that failed in the learner's code, then one summary line and
    where the learner stands: the written steps that pass, the step to fix first, or the next
    region to write. Records the state for `tt status` unless `record_state` is false (a run
    filtered by CTest arguments says nothing about the whole suite). Returns 0 when all passed.

    Which step a failure of the learner's own belongs to: last-run.json keeps, for each case, the
    stub that last blocked it. A case that stub K stopped ran every step before K without failing;
    once K is written and the case fails in the learner's code, step K is the likely culprit."""
    out = out or sys.stdout
    cases = read_junit(junit)
    previous = read_json(os.path.join(copy, "last-run.json")) or {}
    history = dict(previous.get("blocked_by", {}))
    old = old_style_copy(copy, module)
    if old:
        print(f"tt: exercises/{module} was made by an older tools/tt: its stubs (e.g. in {old}) do not say which "
              f"function they stand for, so failures cannot be sorted. Save what you wrote, then run "
              f"tools/tt exercise {module} --reset for a copy whose stubs name themselves.", file=out)
    regions = module_regions(root, module)
    blocked, own = classify(cases, module, regions)
    left = remaining_stubs(root, copy, module)
    stubbed_orders = {r.order for r, _ in left}
    written = [r for r in regions if r.order not in stubbed_orders]
    by_location = {r.location: r for r in regions}
    for (fn, loc), group in blocked.items():
        if loc in by_location:
            history.update({c.name: by_location[loc].order for c in group})
    fix = {}
    for c, _ in own:
        k = step_to_fix(c.name, history, written)
        if k is not None:
            fix.setdefault(k, []).append(c)
    culprit = {c.name: k for k, group in fix.items() for c in group}
    failed = [c for c in cases if c.state == "failed"]
    if failed:
        print(f"\nFailing cases ({len(failed)} of {len(cases)}):", file=out)
        for c, stub in own:
            step = f" (step {culprit[c.name]})" if c.name in culprit else ""
            also = f" (then it ran into the stub of `{stub[0]}`)" if stub else ""
            print(f"  failed in YOUR CODE{step}: {short_name(c.name)}{also}", file=out)
        for (fn, loc), group in blocked.items():
            for c in group:
                print(f"  blocked by the stub of `{fn}`: {short_name(c.name)}", file=out)
    for c, _ in own:
        print(f"\n----- {short_name(c.name)}: failed in your code -----", file=out)
        print(c.output.rstrip(), file=out)
    parts = [f"{plural(len(group), 'case')} blocked by the stub of `{fn}` ({loc})"
             for (fn, loc), group in sorted(blocked.items(), key=lambda kv: -len(kv[1]))]
    if own:
        names = ", ".join(short_name(c.name) for c, _ in own)
        parts.append(f"{len(own)} failed in your code: {names}")
    print("", file=out)
    passed = sum(c.state == "passed" for c in cases)
    skipped = sum(c.state == "skipped" for c in cases)
    if skipped:
        parts.append(f"{plural(skipped, 'case')} skipped (they need a GPU)" if module == "09"
                     else f"{plural(skipped, 'case')} skipped")
    if not cases:
        print("tt: no test case ran (see the log)", file=out)
    elif failed or skipped:
        print(f"Summary: {passed} of {len(cases)} cases passed; " + "; ".join(parts) + ".", file=out)
    else:
        print(f"Summary: all {len(cases)} cases passed.", file=out)
    rel_copy = copy_prefix(root, copy)
    passing = sorted(r.order for r in written if r.order not in fix)
    if cases and passing and (left or fix):
        if len(passing) == 1:
            name = next(r.function for r in written if r.order == passing[0])
            print(f"{steps_text(passing)}: no case fails in `{name}`.", file=out)
        else:
            print(f"{steps_text(passing)}: no case fails in them.", file=out)
    if cases and fix:
        k = min(fix)
        r = next(r for r in regions if r.order == k)
        names = ", ".join(short_name(c.name) for c in fix[k])
        print(f"Fix step {k} first: `{r.function}` at {rel_copy}/{region_place_in_copy(copy, r, regions)} "
              f"(library: {r.location}); {plural(len(fix[k]), 'case')} {'fails' if len(fix[k]) == 1 else 'fail'} "
              f"in your code: {names}.", file=out)
        if left:
            print(f"{plural(len(left), 'stub')} of {r.total} still to write; step {left[0][0].order} comes after "
                  f"step {k} passes.", file=out)
    elif left:
        r, place = left[0]
        print(f"{plural(len(left), 'stub')} of {r.total} still to write. Next: step {r.order}, "
              f"`{r.function}` at {rel_copy}/{place} (library: {r.location}).", file=out)
    elif cases and not failed:
        print(f"Every region of module {module} is written and the suite passes: module {module} done.", file=out)
    elif cases:
        print("Every stub is replaced; fix the cases above that failed in your code.", file=out)
    if record_state:
        state = suite_state(cases)
        state.update({"blocked_by": history, "fix_step": min(fix) if cases and fix else None})
        write_json(os.path.join(copy, "last-run.json"), state)
    return 1 if failed or not cases else 0


def record(junit, status_dir):
    """After `tt test`: each module suite's state, as status_dir/suite-NN.json."""
    by_module = {}
    for c in read_junit(junit):
        module = suite_module(c.name)
        if module:
            by_module.setdefault(module, []).append(c)
    for module, cases in by_module.items():
        write_json(os.path.join(status_dir, f"suite-{module}.json"), suite_state(cases))


# --- tt status -------------------------------------------------------------------------------------

def front_matter(readme):
    """(title, time, milestone) from a module README's heading and front-matter line."""
    title = time = milestone = ""
    try:
        lines = read_lines(readme)[:6]
    except OSError:
        return title, time, milestone
    for line in lines:
        m = re.match(r"#\s*Module\s+\d+\s*[\u2014\u2013:-]+\s*(.+)", line)
        if m and not title:
            title = m.group(1).strip()
        if line.startswith(">"):
            t = re.search(r"\*\*Time:\*\*\s*(.*?)\s*(?:\u00b7|$)", line)
            ms = re.search(r"\*\*Milestone:\*\*\s*(.*?)\s*(?:\u00b7|$)", line)
            time = t.group(1) if t else time
            milestone = ms.group(1) if ms else milestone
    return title, time, milestone


def describe_state(state):
    if not state:
        return "never run"
    if state.get("state") == "no tests":
        return "no tests ran"
    if state.get("state") == "passed":
        skipped = state.get("skipped", 0)
        return f"passed ({state.get('total', '?')}" + (f", {skipped} skipped)" if skipped else ")")
    if state.get("state") == "build failed":
        return "build failed"
    return f"failed {state.get('failed', '?')} of {state.get('total', '?')}"


def exercise_mtime(copy):
    """When the learner last ran (or made) the copy."""
    for path in (os.path.join(copy, "last-run.json"), copy):
        try:
            return os.path.getmtime(path)
        except OSError:
            continue
    return 0.0


def status(root, build_dir, out=None):
    out = out or sys.stdout
    status_dir = os.path.join(build_dir, "tt-status")
    modules = sorted(n for n in os.listdir(os.path.join(root, "modules"))
                     if re.match(r"\d\d_", n) and os.path.isdir(os.path.join(root, "modules", n)))
    rows, next_command, in_progress = [], None, []
    for name in modules:
        nn = name[:2]
        title, time, milestone = front_matter(os.path.join(root, "modules", name, "README.md"))
        walked = os.path.exists(os.path.join(status_dir, f"walkthrough-{nn}"))
        suite = read_json(os.path.join(status_dir, f"suite-{nn}.json"))
        copy = os.path.join(root, "exercises", nn)
        exercise = read_json(os.path.join(copy, "last-run.json")) if os.path.isdir(copy) else None
        try:
            regions = module_regions(root, nn)
            left = remaining_stubs(root, copy, nn) if os.path.isdir(copy) else None
        except ExerciseError:
            regions, left = [], None
        if not os.path.isdir(copy):
            stubs = "no copy yet" if regions else "-"
        else:
            stubs = f"{len(left)} of {len(regions)} to write" if left else "all written"
        ex_text = describe_state(exercise) if os.path.isdir(copy) else "-"
        rows.append((nn, title or name[3:], time, "ran" if walked else "not yet",
                     describe_state(suite), ex_text, stubs, milestone))
        green = (exercise or {}).get("state") == "passed" if os.path.isdir(copy) else \
            (suite or {}).get("state") == "passed"
        if os.path.isdir(copy) and regions and (left or not green):
            in_progress.append((exercise_mtime(copy), nn, exercise or {}, left, regions))
        if next_command is None:
            if not walked:
                next_command = f"tools/tt walkthrough {nn}"
            elif not green:
                next_command = f"tools/tt exercise {nn}" if regions else f"tools/tt test {nn}"
    head = ("NN", "title", "time", "walkthrough", "suite (tt test)", "exercise", "stubs")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*head).rstrip(), file=out)
    for r in rows:
        line = fmt.format(*r[:-1]).rstrip()
        print(line + (f"  milestone: {r[-1]}" if r[-1] else ""), file=out)
    print("", file=out)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import milestones  # here, not at the top: it imports this module
    print("milestones (tools/tt milestone list | run NAME):", file=out)
    for line in milestones.table_lines(root, build_dir):
        print("  " + line, file=out)
    print("", file=out)
    if in_progress:
        # An exercise under way comes before everything else: the one run (or made) last.
        _, nn, exercise, left, regions = max(in_progress, key=lambda p: p[0])
        fix = exercise.get("fix_step")
        if fix:
            r = next((r for r in regions if r.order == fix), None)
            what = f"fix step {fix} of {len(regions)} first" + (f", `{r.function}`" if r else "")
        elif left:
            r, place = left[0]
            what = f"step {r.order} of {r.total}, `{r.function}` at exercises/{nn}/{place}"
        else:
            what = "every stub is written; " + describe_state(exercise)
        next_command = f"tools/tt exercise {nn}  ({what})"
    if next_command is None:
        waiting = milestones.next_to_run(root, build_dir)
        if waiting:
            next_command = f"tools/tt milestone run {waiting}"
    if next_command:
        print(f"next: {next_command}", file=out)
    else:
        print("every module's walkthrough has run and its suite passes: the course is done", file=out)


# --- command line ----------------------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="print module NN's regions in the recommended order")
    p.add_argument("root")
    p.add_argument("module")
    p.add_argument("--copy", help="also say where each region is in this copy")
    p = sub.add_parser("make", help="copy ROOT into DEST with module NN's regions stubbed")
    p.add_argument("root")
    p.add_argument("dest")
    p.add_argument("module")
    p.add_argument("--only", type=int, help="stub only this region (1-based, in `list` order; 0: none)")
    p = sub.add_parser("solve", help="write region I's library body over its stub in a copy")
    p.add_argument("root")
    p.add_argument("copy")
    p.add_argument("module")
    p.add_argument("--only", type=int, required=True, help="the region (1-based, in `list` order)")
    p = sub.add_parser("summary", help="summarize a run of module NN's suite on a copy")
    p.add_argument("root")
    p.add_argument("copy")
    p.add_argument("module")
    p.add_argument("junit")
    p.add_argument("--no-record", action="store_true", help="do not record the state for `tt status`")
    p = sub.add_parser("record", help="record each module suite's state from a CTest JUnit file")
    p.add_argument("junit")
    p.add_argument("status_dir")
    p = sub.add_parser("status", help="per module: walkthrough, suite, exercise; the next command")
    p.add_argument("root")
    p.add_argument("build_dir")
    args = parser.parse_args(argv)
    module = f"{int(args.module):02d}" if getattr(args, "module", None) is not None else None
    try:
        if args.command == "list":
            regions = module_regions(args.root, module)
            if regions:
                print("\n".join(list_lines(regions, args.copy, args.root)))
        elif args.command == "make":
            make(args.root, args.dest, module, args.only)
        elif args.command == "solve":
            solve(args.root, args.copy, module, args.only)
        elif args.command == "summary":
            return summary(args.root, args.copy, module, args.junit, record_state=not args.no_record)
        elif args.command == "record":
            record(args.junit, args.status_dir)
        else:
            status(args.root, args.build_dir)
    except ExerciseError as e:
        print(f"exercise: {e}", file=sys.stderr)
        return 1
    except (OSError, ET.ParseError) as e:
        print(f"exercise: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
