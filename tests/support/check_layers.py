#!/usr/bin/env python3
"""Holds the include graph to the layer table of src/README.md.

Reads every `#include "..."` in src/, tools/, include/ and python/src/ (C++ and CUDA sources and
headers; python/src/ is the Python package's extension, a client of the library as tools/ is),
places the including file and the included one in a layer (the table's "where" column), and
fails, listing each offending arrow, when the table does not let the first layer include the
second, or when a file or an include cannot be placed.

usage: check_layers.py [--root REPO]      check the repository (default: two folders up)
       check_layers.py --self-test        check that a forbidden arrow in a scratch tree fails
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

SOURCE = re.compile(r"\.(h|hpp|cc|cpp|cu|cuh|def|inc)$")
# The folders whose files are checked (each must be placed by the table).
CHECKED = ("src", "include", "tools", "python/src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_table(root):
    """{layer: (set of allowed layers, list of "where" entries)} from src/README.md."""
    readme = os.path.join(root, "src", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"<!-- layers: begin -->(.*?)<!-- layers: end -->", text, re.S)
    if not match:
        raise SystemExit(f"{readme}: no layer table between the layers: begin/end markers")
    layers = {}
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= set("-"):
            continue
        name, where, allowed = cells
        places = []
        for item in re.findall(r"`([^`]+)`(\s*\(its own files\))?", where):
            places.append((item[0].rstrip("/"), bool(item[1])))
        allow = {a.strip() for a in allowed.split(",") if a.strip()}
        layers[name] = (allow, places)
    for name, (allow, _) in layers.items():
        unknown = allow - set(layers)
        if unknown:
            raise SystemExit(f"{readme}: layer {name} may include unknown layers {sorted(unknown)}")
    return layers


def layer_of(path, layers):
    """The layer of a repository-relative path: the longest matching "where" entry. An entry
    marked "(its own files)" holds only the files directly in that folder."""
    best, best_len = None, -1
    for name, (_, places) in layers.items():
        for folder, own_files_only in places:
            if own_files_only:
                hit = os.path.dirname(path) == folder
            else:
                hit = path.startswith(folder + "/")
            if hit and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def resolve(root, include, including):
    """The repository-relative path an include names: beside the including file first, then
    from src/ and include/ (the library's include roots)."""
    for base in (os.path.dirname(including), "src", "include"):
        candidate = os.path.normpath(os.path.join(base, include))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate.replace(os.sep, "/")
    return None


def check(root):
    layers = read_table(root)
    problems = []
    arrows = 0
    for top in CHECKED:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                layer = layer_of(path, layers)
                if layer is None:
                    problems.append(f"{path}: in no layer of the table")
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    target = resolve(root, m.group(1), path)
                    if target is None:
                        problems.append(f'{path}:{line}: #include "{m.group(1)}" names no file')
                        continue
                    to = layer_of(target, layers)
                    if to is None:
                        problems.append(f"{path}:{line}: {target} is in no layer of the table")
                        continue
                    arrows += 1
                    if to != layer and to not in layers[layer][0]:
                        problems.append(
                            f'{path}:{line}: #include "{m.group(1)}": {layer} may not include '
                            f"{to} (src/README.md, Layers)")
    return problems, arrows


def self_test():
    """A scratch tree with the real table and one forbidden arrow (cuda -> cpu) must fail, and
    the same tree without it must pass."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    scratch = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(scratch, "src", "backends", "cpu"))
        os.makedirs(os.path.join(scratch, "src", "backends", "cuda"))
        os.makedirs(os.path.join(scratch, "include", "switchyard"))
        os.makedirs(os.path.join(scratch, "tools"))
        shutil.copy(os.path.join(root, "src", "README.md"), os.path.join(scratch, "src"))
        with open(os.path.join(scratch, "src", "backends", "backend.h"), "w") as f:
            f.write("#pragma once\n")
        with open(os.path.join(scratch, "src", "backends", "cpu", "cpu_kernels.h"), "w") as f:
            f.write('#include "backends/backend.h"\n')
        bad = os.path.join(scratch, "src", "backends", "cuda", "cuda_partition.cc")
        with open(bad, "w") as f:
            f.write('#include "backends/backend.h"\n#include "backends/cpu/cpu_kernels.h"\n')
        problems, _ = check(scratch)
        if len(problems) != 1 or "cuda may not include cpu" not in problems[0]:
            print("self-test: the forbidden cuda -> cpu arrow was not reported as expected:")
            print("\n".join(problems) or "(nothing reported)")
            return 1
        with open(bad, "w") as f:
            f.write('#include "backends/backend.h"\n')
        problems, _ = check(scratch)
        if problems:
            print("self-test: a tree with allowed arrows only was refused:")
            print("\n".join(problems))
            return 1
        # The Python extension is held to its row as well: the public API yes, the cpu no.
        os.makedirs(os.path.join(scratch, "python", "src"))
        with open(os.path.join(scratch, "include", "switchyard", "switchyard.hpp"), "w") as f:
            f.write("#pragma once\n")
        extension = os.path.join(scratch, "python", "src", "module.cc")
        with open(extension, "w") as f:
            f.write('#include "switchyard/switchyard.hpp"\n#include "backends/cpu/cpu_kernels.h"\n')
        problems, _ = check(scratch)
        if len(problems) != 1 or "python may not include cpu" not in problems[0]:
            print("self-test: the forbidden python -> cpu arrow was not reported as expected:")
            print("\n".join(problems) or "(nothing reported)")
            return 1
        print("self-test: a forbidden arrow fails, allowed ones pass")
        return 0
    finally:
        shutil.rmtree(scratch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems, arrows = check(os.path.abspath(args.root))
    if problems:
        print(f"layering: {len(problems)} problem(s):")
        print("\n".join(problems))
        return 1
    print(f"layering: {arrows} include arrows, all allowed by src/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
