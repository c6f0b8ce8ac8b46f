#!/usr/bin/env python3
"""Length limits of the project's code: no file over 600 lines and no function over 100 lines,
outside the kernels and generated fixtures (EXEMPT below says which folders and why).

Checked: C, C++ and HIP sources, Python, shell and CMake files under SOURCE_DIR (build trees,
outputs and hidden folders other than .ci are skipped). Function lengths are measured for C++
(a brace-matching heuristic, below) and Python (the ast module, exact); shell and CMake files are
held to the file limit only.

The C++ heuristic: comments, string and character literals and preprocessor lines are blanked
(newlines kept, so line numbers hold); then every `{` outside a function body is classified by
the text before it (since the previous `;`, `{` or `}`): `namespace`/`class`/`struct`/`union`/
`enum`/`extern "C"` open a scope that is searched further, a head ending in `)` (after const,
noexcept, override, final, a trailing return type) opens a function body, which runs from the
head's first line to its matching `}`; anything else (an initializer) is skipped whole.
Lambdas and local classes count toward the function that holds them.

usage: check_lengths.py [--max-file N] [--max-function N] SOURCE_DIR   (exit 1, one line each)
       check_lengths.py [--max-file N] [--max-function N] --files PATH...  (no exemptions)
"""
import argparse
import ast
import bisect
import os
import re
import sys

CPP_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".hip", ".cu", ".cuh")
OTHER_SUFFIXES = (".py", ".sh", ".cmake")

# (path prefix or suffix rule, why). A path matching one is not checked at all.
EXEMPT = (
    ("suffix:.hip", "GPU kernels and their launchers"),
    ("suffix:.cu", "GPU kernels"),
    ("arch/deepseek4/cpu/", "CPU kernels (the reference every GPU kernel is tested against)"),
    ("tests/fixtures/", "generated golden fixtures"),
    ("tests/data/", "generated test data"),
)

SKIP_DIRS = {"__pycache__", "node_modules"}


def exempt_reason(rel):
    for rule, why in EXEMPT:
        if rule.startswith("suffix:"):
            if rel.endswith(rule[len("suffix:"):]):
                return why
        elif rel.startswith(rule):
            return why
    return None


def checked_kind(rel):
    """'cpp', 'py', 'other' for files under the limits, None for the rest."""
    base = os.path.basename(rel)
    if rel.endswith(CPP_SUFFIXES):
        return "cpp"
    if rel.endswith(".py"):
        return "py"
    if rel.endswith(OTHER_SUFFIXES) or base == "CMakeLists.txt":
        return "other"
    return None


def walk(root):
    """Relative paths of every file under root that the limits apply to, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        top = rel_dir == "."
        keep = []
        for d in dirnames:
            if d in SKIP_DIRS or (d.startswith(".") and d != ".ci"):
                continue
            if top and (d.startswith("build") or d in ("out", "shared")):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, f))
            if checked_kind(rel) is not None:
                out.append(rel)
    return sorted(out)


# ---- C++ -------------------------------------------------------------------------------------

def blank_cpp(text):
    """text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i  # to the end of the directive: continued lines and block comments included
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c not in " \t\r":
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' and i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")
                                                            or text[i - 3:i - 1] == "u8" or text[i - 2] in "LuU"):
            m = re.compile(r'"([^()\\\s]{0,16})\(').match(text, i)
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i, min(j + 1, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


ACCESS_RE = re.compile(r"\s*(public|private|protected)\s*:(?!:)")  # match() only: anchored at pos
# A scope keyword with no parenthesis after it (`template <class T> void f(T)` is a function;
# `MACRO(x) struct S` is a struct).
CONTAINER_RE = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()]*$")
QUALIFIER_TAIL_RE = re.compile(
    r"(\s*(const|volatile|noexcept|override|final|mutable|try|&&|&)\s*$)|(\s*noexcept\s*\([^()]*\)\s*$)"
    r"|(\s*->\s*[\w:<>,\s*&]+$)")
CONTROL_RE = re.compile(r"^(if|for|while|switch|catch|do|else)\b")


def normalize_head(head):
    head = " ".join(head.split())
    while True:
        m = ACCESS_RE.match(head)
        if not m:
            return head.strip()
        head = head[m.end():]


def top_level_close_then_colon(head):
    """True when the head has a `)` at paren depth 0 followed by a single `:` (an init list)."""
    depth = 0
    for k, ch in enumerate(head):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                rest = head[k + 1:].lstrip()
                rest = re.sub(r"^noexcept(\s*\([^()]*\))?\s*", "", rest)
                if rest.startswith(":") and not rest.startswith("::"):
                    return True
    return False


def classify(head):
    """'container', 'function', 'initlist' (a member's brace init in a constructor) or 'other'."""
    h = normalize_head(head)
    if CONTAINER_RE.search(h) or re.fullmatch(r"extern\s*", h):
        return "container"
    if "(" not in h or CONTROL_RE.match(h):
        return "other"
    if top_level_close_then_colon(h):
        # `Ctor(...) : a_(1), b_{2}` then `{`: the body. `Ctor(...) : a_(1), b_` then `{`: b_'s init.
        if h.endswith((")", "}")):
            return "function"
        return "initlist" if re.search(r"[\w>]$", h) else "other"
    tail = h
    while True:
        stripped = QUALIFIER_TAIL_RE.sub("", tail)
        if stripped == tail:
            break
        tail = stripped
    return "function" if tail.endswith(")") else "other"


def function_name(head):
    h = normalize_head(head)
    if re.search(r"\]\s*(\(|\{|$)", h.split("(")[0] + "(") or "[" in h.split("(")[0]:
        return "lambda"
    m = re.search(r"(operator\s*\(\s*\)|operator\s*[^\s(]+|[~\w:]+)\s*\(", h)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def cpp_functions(text):
    """[(name, first_line, last_line)] of the function bodies in C++ source text."""
    code = blank_cpp(text)
    starts = [0] + [k + 1 for k, ch in enumerate(code) if ch == "\n"]

    def line(offset):
        return bisect.bisect_right(starts, offset)

    found = []
    stack = []  # (kind, head_start, name)
    boundary = 0  # where the current head begins
    for k, ch in enumerate(code):
        if ch == ";":
            if not stack or stack[-1][0] == "container":
                boundary = k + 1
        elif ch == "{":
            in_function = any(s[0] in ("function", "inner") for s in stack)
            if in_function:
                stack.append(("inner", k, None))
                continue
            head = code[boundary:k]
            kind = classify(head)
            start = boundary
            m = ACCESS_RE.match(code, start, k)
            while m:
                start = m.end()
                m = ACCESS_RE.match(code, start, k)
            start += len(code[start:k]) - len(code[start:k].lstrip())
            stack.append((kind, start, function_name(head) if kind == "function" else None))
            boundary = k + 1
        elif ch == "}":
            if not stack:
                boundary = k + 1
                continue
            kind, start, name = stack.pop()
            if kind == "function":
                found.append((name, line(start), line(k)))
            if kind in ("initlist", "other"):
                # A member's brace init or a default argument `= {}`: the head goes on after it.
                # (An initializer that ends a declaration is followed by `;`, which resets.)
                boundary = start
            elif not stack or stack[-1][0] == "container":
                boundary = k + 1
    return found


# ---- Python ----------------------------------------------------------------------------------

def py_functions(text, path):
    tree = ast.parse(text, filename=path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node.lineno, node.end_lineno))
    return sorted(out, key=lambda f: f[1])


# ---- the check -------------------------------------------------------------------------------

def check_file(path, rel, max_file, max_function):
    """One line per violation in this file."""
    kind = checked_kind(rel)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    problems = []
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > max_file:
        problems.append(f"{rel}: {lines} lines (limit {max_file}): split it by concern")
    try:
        functions = cpp_functions(text) if kind == "cpp" else py_functions(text, rel) if kind == "py" else []
    except SyntaxError as e:
        return problems + [f"{rel}:{e.lineno}: cannot parse: {e.msg}"]
    for name, first, last in functions:
        n = last - first + 1
        if n > max_function:
            problems.append(f"{rel}:{first}: function {name} is {n} lines (limit {max_function})")
    return problems


def main(argv):
    p = argparse.ArgumentParser(description="File and function length limits.")
    p.add_argument("--max-file", type=int, default=600)
    p.add_argument("--max-function", type=int, default=100)
    p.add_argument("--files", action="store_true", help="check the named files, no exemptions")
    p.add_argument("paths", nargs="+")
    a = p.parse_args(argv)
    if a.files:
        targets = [(path, path) for path in a.paths]
    else:
        if len(a.paths) != 1 or not os.path.isdir(a.paths[0]):
            p.error("give one SOURCE_DIR (or --files PATH...)")
        root = a.paths[0]
        targets = [(os.path.join(root, rel), rel) for rel in walk(root) if exempt_reason(rel) is None]
    problems = []
    for path, rel in targets:
        problems += check_file(path, rel, a.max_file, a.max_function)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} length violation(s) in {len(targets)} files checked")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
