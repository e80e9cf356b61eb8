#!/usr/bin/env python3
"""Exercise mode for tools/tt: copies the library with one module's code replaced by stubs.

The library marks the code a learner of module NN writes with two comment lines inside a
function body:

    // TT_EXERCISE_BEGIN(NN)
    ... the body ...
    // TT_EXERCISE_END

`make` copies the project (the paths in COPIED) into a destination folder and replaces the lines
between the markers of module NN with a statement that throws (`__trap()` inside CUDA device
code, where a throw does not compile), keeping the markers so the learner sees where to write.
A file is written only when its content changes, so re-stubbing one region at a time rebuilds
one translation unit. `list` prints module NN's regions. Standard library only.

    exercise.py list ROOT NN
    exercise.py make ROOT DEST NN [--only K]   (K: 1-based index into `list`; 0 stubs nothing)
"""

import argparse
import os
import re
import shutil
import sys

COPIED = ["CMakeLists.txt", "cmake", "tinytorch", "tests", "modules"]
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
BEGIN = re.compile(r"^(\s*)//\s*TT_EXERCISE_BEGIN\((\d+)\)\s*$")
END = re.compile(r"^\s*//\s*TT_EXERCISE_END\s*$")
ERROR_INCLUDE = '#include "tinytorch/core/error.h"'


class ExerciseError(Exception):
    pass


def module_dir_name(root, module):
    """modules/NN_name for module NN, as `NN_name`."""
    names = sorted(n for n in os.listdir(os.path.join(root, "modules")) if n.startswith(module + "_"))
    if not names:
        raise ExerciseError(f"there is no module {module} under {root}/modules")
    return names[0]


def copied_files(root):
    """Every file of COPIED, as paths relative to root."""
    for top in COPIED:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def find_regions(lines, path):
    """[(module, begin_index, end_index, indent)] of one file; checks that markers pair up."""
    regions, open_region = [], None
    for i, line in enumerate(lines):
        begin = BEGIN.match(line)
        if begin:
            if open_region:
                raise ExerciseError(f"{path}:{i + 1}: TT_EXERCISE_BEGIN inside the region opened at "
                                    f"line {open_region[1] + 1}")
            open_region = (f"{int(begin.group(2)):02d}", i, begin.group(1))
        elif END.match(line):
            if not open_region:
                raise ExerciseError(f"{path}:{i + 1}: TT_EXERCISE_END without TT_EXERCISE_BEGIN")
            regions.append((open_region[0], open_region[1], i, open_region[2]))
            open_region = None
        elif "TT_EXERCISE_" in line and line.lstrip().startswith("//"):
            raise ExerciseError(f"{path}:{i + 1}: malformed exercise marker: {line.strip()}")
    if open_region:
        raise ExerciseError(f"{path}:{open_region[1] + 1}: TT_EXERCISE_BEGIN without TT_EXERCISE_END")
    return regions


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


def stub_lines(module, readme, indent, device):
    if device == "both":  # compiled for the host and, under nvcc, for the GPU: a stub for each
        return [f"{indent}#ifdef __CUDA_ARCH__\n", f"{indent}__trap();\n", f"{indent}#else\n",
                f'{indent}throw ::tt::Error("exercise {module}: implement this (see {readme})");\n',
                f"{indent}#endif\n"]
    if device:
        return [f'{indent}printf("exercise {module}: implement this kernel (see {readme})\\n");\n',
                f"{indent}__trap();\n"]
    return [f'{indent}throw ::tt::Error("exercise {module}: implement this (see {readme})");\n']


def add_error_include(lines):
    """Makes tt::Error visible in a stubbed file: after its last #include, or at the top."""
    if any(line.strip() == ERROR_INCLUDE for line in lines):
        return lines
    last = max((i for i, line in enumerate(lines) if line.startswith("#include")), default=-1)
    return lines[:last + 1] + [ERROR_INCLUDE + "\n"] + lines[last + 1:]


def module_regions(root, module):
    """[(relative path, line number)] of module NN's regions, in a stable order."""
    found = []
    for rel in copied_files(root):
        if not rel.endswith(SOURCE_EXTENSIONS):
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            lines = f.readlines()
        for region_module, begin, _, _ in find_regions(lines, rel):
            if region_module == module:
                found.append((rel, begin + 1))
    return found


def stubbed(root, rel, module, readme, only, counter):
    """The text of one source file with module NN's regions stubbed (only the `only`-th when
    `only` is set), or None when nothing in it changes. `counter` numbers regions across files."""
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        lines = f.readlines()
    out, last, changed, throws = [], 0, False, False
    for region_module, begin, end, indent in find_regions(lines, rel):
        if region_module != module:
            continue
        counter[0] += 1
        if only is not None and counter[0] != only:
            continue
        device = in_device_code(lines, begin, rel) or ("both" if in_host_device_function(lines, begin) else False)
        out += lines[last:begin + 1]
        out += stub_lines(module, readme, indent, device)
        last, changed, throws = end, True, throws or device is not True
    if not changed:
        return None
    out += lines[last:]
    return "".join(add_error_include(out) if throws else out)


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


def make(root, dest, module, only):
    readme = f"modules/{module_dir_name(root, module)}/README.md"
    regions = module_regions(root, module)
    if not regions:
        raise ExerciseError(f"module {module} marks no TT_EXERCISE_BEGIN({module}) regions in the library")
    if only is not None and not 0 <= only <= len(regions):
        raise ExerciseError(f"--only {only}: module {module} has {len(regions)} regions")
    counter = [0]
    for rel in copied_files(root):
        text = stubbed(root, rel, module, readme, only, counter) if rel.endswith(SOURCE_EXTENSIONS) else None
        if text is None:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        else:
            data = text.encode("utf-8")
        write_if_changed(os.path.join(dest, rel), data)
        shutil.copymode(os.path.join(root, rel), os.path.join(dest, rel))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="print module NN's regions as FILE:LINE")
    p_list.add_argument("root")
    p_list.add_argument("module")
    p_make = sub.add_parser("make", help="copy ROOT into DEST with module NN's regions stubbed")
    p_make.add_argument("root")
    p_make.add_argument("dest")
    p_make.add_argument("module")
    p_make.add_argument("--only", type=int, help="stub only this region (1-based; 0: none)")
    args = parser.parse_args(argv)
    module = f"{int(args.module):02d}"
    try:
        if args.command == "list":
            for rel, line in module_regions(args.root, module):
                print(f"{rel}:{line}")
        else:
            make(args.root, args.dest, module, args.only)
    except ExerciseError as e:
        print(f"exercise: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
