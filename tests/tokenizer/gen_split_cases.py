#!/usr/bin/env python3
"""Writes split_cases.jsonl: texts and their pieces under the GPT-2 split pattern, computed by
Python's backtracking `re` engine as an oracle independent of the C++ splitter.

\\p{L}, \\p{N} and \\s are spelled out as explicit classes (Python's `re` has no \\p{..}, and its
\\s also matches U+001C..U+001F, which the White_Space property and Hugging Face's engine do not).
Rerun after changing the cases:  python3 tests/tokenizer/gen_split_cases.py
"""
import json
import os
import random
import re
import unicodedata

WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def category_class(prefix):
    ranges, start = [], None
    for cp in range(0x110001):
        inside = cp < 0x110000 and not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)).startswith(prefix)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            ranges.append(f"\\U{start:08X}-\\U{cp - 1:08X}")
            start = None
    return "".join(ranges)


def pattern():
    letters, numbers = category_class("L"), category_class("N")
    space = f"[{WHITE_SPACE}]"
    return re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+| ?[^{WHITE_SPACE}{letters}{numbers}]+"
        rf"|{space}+(?![^{WHITE_SPACE}])|{space}+"
    )


POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789",
    "'''\".,;:!?-()[]{}<>/\\|_#*&^%$@~`+=",
    "     \n\n\t",
    "\u00a0\u3000\u2028\u0085\u001c\u000b",
    "éèçñüößØÆÐþΩπλжяשעعربي日本語中文한국어",
    "½¾²³٣٤०१ⅧⅫ",
    "👋🏽🎉😀🚀✨€£©®™°•…—–\u200b\u200d",
]
FIXED = [
    "I'm here, they'll go", "DON'T", "'sup", "?'s", "we're you've he'd it's",
    "a   b", "a  ", "   ", "a\n\nb", "a\n\n b", "\tx", "x86_64", "3.14159 and 1,000",
    "Hello!!! ...?", "na\u00efve caf\u00e9", "hi \U0001F44B\U0001F3FD!", " \u00a0 x", "a\u3000 b",
    "line\r\nnext", "\u001cx\u001d y", "''s", "'S", "it's'll", " 's", "  'll",
]


def main():
    rng = random.Random(20261130)
    texts = list(FIXED)
    for _ in range(400):
        length = rng.randint(1, 30)
        texts.append("".join(rng.choice(rng.choice(POOLS)) for _ in range(length)))
    regex = pattern()
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "split_cases.jsonl")
    with open(out_path, "w", encoding="utf-8", newline="\n") as f:
        for text in texts:
            pieces = regex.findall(text)
            assert "".join(pieces) == text, (text, pieces)
            f.write(json.dumps({"text": text, "pieces": pieces}, ensure_ascii=True) + "\n")
    print(f"wrote {len(texts)} cases to {out_path}")


if __name__ == "__main__":
    main()
