#!/usr/bin/env python3
"""The layering rules of docs/architecture.md, checked on the tree and on the configured build.

Tiers, by the folder a target or file lives in:
  sdk     plugins/ (the C ABI headers, plugins/support)        may use: sdk
  core    core/                                                may use: core, sdk
  plugin  transports/<p>, pagers/<p>, arch/<p>,                may use: its own folder, the
          plugins/examples/<p>                                 <kind>/common of its kind, sdk
  free    tests/, tools/, the top level                        may use anything
Checked three ways: every target's own links (the build's link graph, from the manifest CMake
writes), every target's own include folders, and every quoted #include of the sources (resolved
against the tree). Since every target's direct links are checked, transitive links follow.
Also: no source file points outside the repository (shared/reference, shared/DESIGN.md).

usage: check_layering.py SOURCE_DIR MANIFEST   (exit 1 with one line per violation)
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".hip", ".cu", ".cuh")
PLUGIN_KINDS = ("transports", "pagers", "arch")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
OUTSIDE_RE = re.compile(r"shared/(reference|DESIGN\.md)")


def tier_of(root, path):
    """(tier, group) of an absolute path: group names the plugin folder for the plugin tier."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    if rel.startswith(".."):
        return "external", None
    parts = rel.split(os.sep)
    if parts[0] == "plugins":
        if len(parts) >= 3 and parts[1] == "examples":
            return "plugin", "examples/" + parts[2]
        return "sdk", None
    if parts[0] == "core":
        return "core", None
    if parts[0] in PLUGIN_KINDS:
        # The kind's folder itself is an include root (arch/ for "deepseek4/..."): usable by
        # plugins of that kind only; which plugin's files they then reach is checked per #include.
        return "plugin", parts[0] + "/" + (parts[1] if len(parts) >= 2 else "*")
    return "free", None


def allowed(user, used):
    """May something in tier/group `user` use something in tier/group `used`?"""
    (ut, ug), (dt, dg) = user, used
    if ut == "free" or dt == "external":
        return True
    if ut == "sdk":
        return dt == "sdk"
    if ut == "core":
        return dt in ("core", "sdk")
    # plugin
    if dt == "sdk":
        return True
    if dt != "plugin":
        return False
    kind = ug.split("/")[0]
    return dg in (ug, kind + "/common", kind + "/*")


def describe(t):
    tier, group = t
    return group if group else tier


def check_targets(root, manifest):
    errors = []
    targets = {}
    with open(manifest, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5:
                continue
            name, _type, src, links, includes = fields
            targets[name] = (src, [x for x in links.split(";") if x], [x for x in includes.split(";") if x])
    if not targets:
        return [f"{manifest}: no targets (was CMake configured with tests/layering/target_manifest.cmake?)"], 0
    for name, (src, links, includes) in sorted(targets.items()):
        user = tier_of(root, src)
        for lib in links:
            if lib not in targets:
                continue  # external package or system library
            used = tier_of(root, targets[lib][0])
            if not allowed(user, used):
                errors.append(f"link: {name} ({describe(user)}) links {lib} ({describe(used)})")
        for inc in includes:
            if not os.path.isabs(inc):
                continue
            used = tier_of(root, inc)
            if not allowed(user, used):
                errors.append(f"include folder: {name} ({describe(user)}) has {inc} ({describe(used)})")
    return errors, len(targets)


def source_files(root):
    for top in ("core", "plugins", *PLUGIN_KINDS, "tests", "tools"):
        for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(SOURCE_SUFFIXES) or f in ("CMakeLists.txt",) or f.endswith((".cmake", ".py", ".sh")):
                    yield os.path.join(dirpath, f)


def resolve_include(root, path, name):
    """Every file in the tree that `#include "name"` in `path` could mean."""
    here = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.isfile(here):
        return [here]  # the compiler takes the including file's folder first
    found = []
    for base in ("core", "arch", "plugins/include", "plugins/support", "plugins/support/pager-core/include"):
        candidate = os.path.join(root, base, name)
        if os.path.isfile(candidate):
            found.append(candidate)
    return found


def check_sources(root):
    errors = []
    count = 0
    for path in source_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if OUTSIDE_RE.search(text) and not rel.startswith("tests/layering/"):
            errors.append(f"outside reference: {rel} cites a file outside the repository (cite docs/ instead)")
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        count += 1
        user = tier_of(root, path)
        for name in INCLUDE_RE.findall(text):
            for target in resolve_include(root, path, name):
                used = tier_of(root, target)
                if not allowed(user, used):
                    errors.append(f'include: {rel} ({describe(user)}) includes "{name}" = '
                                  f"{os.path.relpath(target, root)} ({describe(used)})")
    return errors, count


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root, manifest = sys.argv[1], sys.argv[2]
    target_errors, n_targets = check_targets(root, manifest)
    source_errors, n_sources = check_sources(root)
    errors = target_errors + source_errors
    for e in errors:
        print("layering: " + e)
    if errors:
        print(f"layering: {len(errors)} violation(s); the rules are in docs/architecture.md")
        return 1
    print(f"layering: ok ({n_targets} targets, {n_sources} source files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
