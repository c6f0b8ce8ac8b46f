#!/usr/bin/env python3
"""Converts a routing trace (v1-v4 text, or .xz of it) to v4, the one-line-per-call format:

    python3 tools/train/trace_to_v4.py IN OUT [--drop-outcomes]

OUT ending in .xz is written xz-compressed at the smallest setting (preset 9 | extreme), else as
text. IN and OUT may be the same file: it is read whole first and replaced only once OUT is
written. v4 carries no hit/prefetched outcomes, so a live run's trace (v3 rows with outcomes) is
refused unless --drop-outcomes says to leave them out. Comment lines are kept; the header's
key=value pairs are kept as they are. Standard library only.
"""
import argparse
import lzma
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_events  # noqa: E402

# The slowest, smallest xz setting: conversion is a one-off, decoding stays as fast.
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def read_text(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", encoding="ascii") as f:
        return f.read()


def write_text(path, text):
    """Writes through a temporary file in OUT's folder, renamed over OUT when complete."""
    data = text.encode("ascii")
    if path.endswith(".xz"):
        data = lzma.compress(data, preset=XZ_PRESET)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return len(data)


def convert(text, drop_outcomes=False):
    """The v4 text of a trace's text; TraceError names the bad line, ValueError refuses outcomes."""
    fields, _, events, outcomes = trace_events.read_events(text)
    if outcomes and not drop_outcomes:
        raise ValueError("the trace has hit/prefetched outcomes, which v4 does not carry "
                         "(pass --drop-outcomes to convert it without them)")
    return trace_events.format_v4(fields, events)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input", help="trace to read: v1-v4 text, or .xz of it")
    p.add_argument("output", help="v4 trace to write (.xz: compressed)")
    p.add_argument("--drop-outcomes", action="store_true", help="convert a trace with hit/prefetched columns")
    args = p.parse_args()
    try:
        text = read_text(args.input)
        out = convert(text, args.drop_outcomes)
        size = write_text(args.output, out)
    except (OSError, ValueError, EOFError, lzma.LZMAError, UnicodeDecodeError) as e:
        raise SystemExit(f"trace_to_v4: {args.input}: {e}")
    print(f"{args.output}: {size} bytes ({len(text)} bytes of text in, {len(out)} out)")


if __name__ == "__main__":
    main()
