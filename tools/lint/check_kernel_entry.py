#!/usr/bin/env python3
"""Every kernel of the GPU forward pass starts with kernel_entry() (arch/deepseek4/hip/launch.hpp).

A kernel launched overlapped may start while the previous kernel of its stream still runs; only
kernel_entry() makes it wait for that kernel's writes. A kernel that reads or writes before it
races, so this check fails the build's tests when any __global__ function's first statement is
anything else.

usage: check_kernel_entry.py DIR...   (the .hip and .hpp files under each; exit 1, one line each)
       check_kernel_entry.py --files PATH...
"""
import pathlib
import re
import sys

ENTRY = "kernel_entry();"


def strip_comments(text):
    """Comments blanked to spaces (line numbers kept); strings are not expected in kernel heads."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)


def kernels(text):
    """(line, name, first statement) of every __global__ function definition in text."""
    for m in re.finditer(r"\b__global__\b", text):
        depth, i = 0, m.end()
        while i < len(text):
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif depth == 0 and c in "{;":
                break
            i += 1
        if i >= len(text) or text[i] == ";":
            continue  # a declaration
        head = text[m.end():i]
        names = re.findall(r"([A-Za-z_]\w*)\s*\(", head)
        name = next((n for n in reversed(names) if n != "__launch_bounds__"), "?")  # the one before the parameters
        body = text[i + 1:].lstrip()
        first = body.split("\n", 1)[0].strip()
        yield text.count("\n", 0, m.start()) + 1, name, first


def check(paths):
    bad = []
    for path in paths:
        text = strip_comments(pathlib.Path(path).read_text())
        for line, name, first in kernels(text):
            if not first.startswith(ENTRY):
                bad.append(f"{path}:{line}: kernel {name} does not start with {ENTRY} (first: {first!r})")
    return bad


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    if argv[0] == "--files":
        paths = argv[1:]
    else:
        paths = sorted(str(p) for d in argv for p in pathlib.Path(d).rglob("*") if p.suffix in (".hip", ".hpp"))
    bad = check(paths)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
