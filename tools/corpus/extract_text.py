#!/usr/bin/env python3
"""Turns Debian documentation (Linux reStructuredText, Python HTML) into plain English paragraphs.

Writes one paragraph per line into train.txt and heldout.txt. Paragraphs are deduplicated by a
hash of their normalised text, and the held-out split is a fixed function of that same hash, so
the split does not depend on file order, machine or Python version. Stdlib only.

Usage: extract_text.py OUT_DIR --rst-root DIR [--rst-root DIR ...] --html-root DIR [...]
"""
import argparse
import gzip
import hashlib
import html.parser
import json
import os
import re
import sys
import unicodedata

HELDOUT_MODULUS = 50  # one paragraph in 50 (2 %) is held out
MIN_CHARS = 40
MIN_WORDS = 6
MIN_LETTER_SHARE = 0.6

# ---------------------------------------------------------------------------------------------
# reStructuredText -> paragraphs

ADORNMENT = re.compile(r"^\s*([=\-~^*#+\"'`:.])\1{2,}\s*$")
DIRECTIVE = re.compile(r"^(\s*)\.\.\s")
# Admonitions whose body is prose worth keeping; every other directive body is code, tables,
# includes or markup and is dropped.
PROSE_DIRECTIVES = re.compile(r"^\s*\.\.\s+(note|warning|tip|hint|important|attention|caution|danger|seealso)::\s*(.*)$")
TABLE_LINE = re.compile(r"^\s*[+|]")
FIELD_LINE = re.compile(r"^\s*:[\w \-]+:(\s|$)")
BULLET = re.compile(r"^\s*(?:[*\-+\u2022]|#\.|\d+[.)]|[a-zA-Z][.)]|\(\d+\))\s+")
ROLE_WITH_TARGET = re.compile(r":[\w:+\-]+:`([^`<]*?)\s*<[^`>]*>`")
ROLE = re.compile(r":[\w:+\-]+:`([^`]*)`")
LINK_WITH_TARGET = re.compile(r"`([^`<]*?)\s*<[^`>]*>`__?")
LINK = re.compile(r"`([^`]+)`__?")
LITERAL = re.compile(r"``([^`]+)``")
DEFAULT_ROLE = re.compile(r"`([^`]+)`")
SUBSTITUTION = re.compile(r"\|([\w\- ]+)\|_?")
EMPHASIS = re.compile(r"\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*")
FOOTNOTE_REF = re.compile(r"\s*\[(?:#|\*|\d+|#\w+)\]_")


def indent_of(line):
    return len(line) - len(line.lstrip(" \t"))


def clean_rst_inline(text):
    text = ROLE_WITH_TARGET.sub(r"\1", text)
    text = ROLE.sub(r"\1", text)
    text = LINK_WITH_TARGET.sub(r"\1", text)
    text = LITERAL.sub(r"\1", text)
    text = LINK.sub(r"\1", text)
    text = DEFAULT_ROLE.sub(r"\1", text)
    text = SUBSTITUTION.sub(r"\1", text)
    text = EMPHASIS.sub(lambda m: m.group(1) or m.group(2), text)
    text = FOOTNOTE_REF.sub("", text)
    return text


def rst_paragraphs(source):
    """Yields the prose paragraphs of one reStructuredText document."""
    lines = source.expandtabs(8).splitlines()
    current = []
    skip_deeper_than = None  # drop every line indented more than this (directive/literal body)
    literal_pending = False  # the previous paragraph ended in '::', so an indented block follows

    def flush():
        nonlocal current
        if current:
            yield " ".join(current)
        current = []

    for line in lines:
        stripped = line.strip()
        if skip_deeper_than is not None:
            if not stripped or indent_of(line) > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not stripped:
            yield from flush()
            continue
        if literal_pending:
            literal_pending = False
            if indent_of(line) > 0:
                # The indented literal block after '::' (usually code or a shell session).
                skip_deeper_than = indent_of(line) - 1
                continue
        prose = PROSE_DIRECTIVES.match(line)
        if prose:
            yield from flush()
            if prose.group(2):
                current.append(prose.group(2))
            continue
        directive = DIRECTIVE.match(line)
        if directive:
            yield from flush()
            skip_deeper_than = len(directive.group(1))
            continue
        if ADORNMENT.match(line) or TABLE_LINE.match(line) or FIELD_LINE.match(line):
            yield from flush()
            continue
        if BULLET.match(line):
            yield from flush()
            line = BULLET.sub("", line, count=1)
            stripped = line.strip()
        if stripped.endswith("::"):
            literal_pending = True
            stripped = stripped[:-2].rstrip()
            if stripped and not stripped.endswith(":"):
                stripped += ":"
            if stripped:
                current.append(stripped)
            yield from flush()
            continue
        current.append(stripped)
    yield from flush()


def rst_document_paragraphs(source):
    for paragraph in rst_paragraphs(source):
        yield clean_rst_inline(paragraph)


# ---------------------------------------------------------------------------------------------
# HTML (Sphinx output) -> paragraphs

BLOCK_TAGS = {
    "p", "div", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "table",
    "section", "blockquote", "br", "ul", "ol", "dl", "caption", "figcaption", "title", "hr",
}
SKIP_TAGS = {"script", "style", "pre", "head", "nav", "footer", "header", "form", "textarea"}
SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "headerlink", "highlight", "clearer",
                "mobile-nav", "versionmodified-hidden"}
VOID_TAGS = {"br", "img", "hr", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}


class SphinxText(html.parser.HTMLParser):
    """Collects the visible prose of a Sphinx page, split at block elements; code is dropped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs = []
        self.current = []
        self.skip_tag = None
        self.skip_depth = 0

    def flush(self):
        text = "".join(self.current).strip()
        if text:
            self.paragraphs.append(text)
        self.current = []

    def handle_starttag(self, tag, attrs):
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in VOID_TAGS:
                self.skip_depth += 1
            return
        classes = set()
        for name, value in attrs:
            if name == "class" and value:
                classes.update(value.split())
        if tag in SKIP_TAGS or classes & SKIP_CLASSES:
            if tag in VOID_TAGS:
                return
            self.skip_tag, self.skip_depth = tag, 1
            return
        if tag in BLOCK_TAGS:
            self.flush()

    def handle_startendtag(self, tag, attrs):
        if self.skip_tag is None and tag in BLOCK_TAGS:
            self.flush()

    def handle_endtag(self, tag):
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth == 0:
                    self.skip_tag = None
            return
        if tag in BLOCK_TAGS:
            self.flush()

    def handle_data(self, data):
        if self.skip_tag is None:
            self.current.append(data)


def html_document_paragraphs(source):
    parser = SphinxText()
    parser.feed(source)
    parser.close()
    parser.flush()
    return parser.paragraphs


# ---------------------------------------------------------------------------------------------
# Normalisation, filtering, dedup, split

WHITESPACE = re.compile(r"\s+")


def normalise(text):
    text = unicodedata.normalize("NFC", text)
    # Control and format characters (other than whitespace) are never prose.
    text = "".join(ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return WHITESPACE.sub(" ", text).strip()


def is_prose(text):
    if len(text) < MIN_CHARS or len(text.split(" ")) < MIN_WORDS:
        return False
    letters = sum(1 for ch in text if ch.isalpha() or ch == " ")
    return letters / len(text) >= MIN_LETTER_SHARE


def paragraph_hash(text):
    return hashlib.sha1(text.encode("utf-8")).digest()


def is_heldout(digest):
    return int.from_bytes(digest[:8], "big") % HELDOUT_MODULUS == 0


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def source_files(rst_roots, html_roots):
    """(path, kind) pairs in a fixed order: sorted by root, then by relative path."""
    found = []
    for root in rst_roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".rst") or name.endswith(".rst.gz"):
                    found.append((os.path.join(dirpath, name), "rst"))
    for root in html_roots:
        for dirpath, dirnames, filenames in os.walk(root):
            # _sources, _static, _images: Sphinx build artefacts, not pages.
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("_"))
            for name in sorted(filenames):
                if not name.endswith(".html"):
                    continue
                if name.startswith(("genindex", "py-modindex", "search", "modindex")):
                    continue
                found.append((os.path.join(dirpath, name), "html"))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--rst-root", action="append", default=[])
    parser.add_argument("--html-root", action="append", default=[])
    args = parser.parse_args()
    for root in args.rst_root + args.html_root:
        if not os.path.isdir(root):
            sys.exit(f"extract_text: source folder {root} does not exist (is its package installed?)")

    os.makedirs(args.out_dir, exist_ok=True)
    seen = set()
    stats = {"files": 0, "paragraphs_seen": 0, "dropped_short_or_symbolic": 0, "dropped_duplicate": 0,
             "train_paragraphs": 0, "heldout_paragraphs": 0, "train_bytes": 0, "heldout_bytes": 0}
    files = source_files(args.rst_root, args.html_root)
    with open(os.path.join(args.out_dir, "train.txt"), "w", encoding="utf-8", newline="\n") as train, \
         open(os.path.join(args.out_dir, "heldout.txt"), "w", encoding="utf-8", newline="\n") as heldout:
        for index, (path, kind) in enumerate(files):
            if index % 1000 == 0:
                print(f"extract_text: {index}/{len(files)} files", flush=True)
            source = read_text(path)
            paragraphs = rst_document_paragraphs(source) if kind == "rst" else html_document_paragraphs(source)
            stats["files"] += 1
            for raw in paragraphs:
                stats["paragraphs_seen"] += 1
                text = normalise(raw)
                if not is_prose(text):
                    stats["dropped_short_or_symbolic"] += 1
                    continue
                digest = paragraph_hash(text)
                if digest in seen:
                    stats["dropped_duplicate"] += 1
                    continue
                seen.add(digest)
                line = text + "\n"
                size = len(line.encode("utf-8"))
                if is_heldout(digest):
                    heldout.write(line)
                    stats["heldout_paragraphs"] += 1
                    stats["heldout_bytes"] += size
                else:
                    train.write(line)
                    stats["train_paragraphs"] += 1
                    stats["train_bytes"] += size
    with open(os.path.join(args.out_dir, "stats.json"), "w") as f:
        json.dump(stats, f, indent=2)
        f.write("\n")
    print("extract_text: " + json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
