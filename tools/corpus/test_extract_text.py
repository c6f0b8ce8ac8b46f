#!/usr/bin/env python3
"""Checks of the corpus extraction (stdlib only): python3 tools/corpus/test_extract_text.py"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_text as ex  # noqa: E402

RST = """\
.. _label:

=====
Title
=====

This paragraph has ``code``, a :ref:`link text <target>` and
a :c:func:`kmalloc` role, plus **bold** text.

.. code-block:: c

   int main(void) { return 0; }

Run the following command::

    $ make menuconfig

.. note::
   Notes are prose and stay.

* first bullet item that is long enough
* second bullet item

+------+------+
| a    | b    |
+------+------+
"""

HTML = """<html><head><title>T</title><script>var x = 1;</script></head><body>
<div class="related"><a href="#">navigation noise</a></div>
<div class="body" role="main"><h1>Heading<a class="headerlink" href="#h">¶</a></h1>
<p>First paragraph with <code>inline code</code> &amp; an entity.</p>
<div class="highlight"><pre>print("dropped")</pre></div>
<p>Second<br/>line after a break.</p></div>
<div class="footer">Copyright noise</div></body></html>"""


class Rst(unittest.TestCase):
    def test_prose_is_kept_and_markup_code_and_tables_are_dropped(self):
        paragraphs = list(ex.rst_document_paragraphs(RST))
        self.assertIn("Title", paragraphs)
        self.assertIn("This paragraph has code, a link text and a kmalloc role, plus bold text.", paragraphs)
        self.assertIn("Run the following command:", paragraphs)
        self.assertIn("Notes are prose and stay.", paragraphs)
        self.assertIn("first bullet item that is long enough", paragraphs)
        joined = "\n".join(paragraphs)
        for dropped in ("int main", "make menuconfig", "| a", "+------", "_label", "====="):
            self.assertNotIn(dropped, joined)


class Html(unittest.TestCase):
    def test_visible_prose_is_kept_and_code_and_navigation_are_dropped(self):
        paragraphs = ex.html_document_paragraphs(HTML)
        self.assertIn("Heading", paragraphs)
        self.assertIn("First paragraph with inline code & an entity.", paragraphs)
        self.assertIn("Second", paragraphs)
        joined = "\n".join(paragraphs)
        for dropped in ("var x", "navigation noise", "print(", "Copyright noise", "¶"):
            self.assertNotIn(dropped, joined)


class Filtering(unittest.TestCase):
    def test_normalise_collapses_whitespace_and_drops_controls(self):
        self.assertEqual(ex.normalise("  a\t b\n\x07c  "), "a b c")

    def test_short_or_symbolic_paragraphs_are_not_prose(self):
        self.assertTrue(ex.is_prose("This sentence is long enough to be kept as prose text."))
        self.assertFalse(ex.is_prose("Too short."))
        self.assertFalse(ex.is_prose("0x1f 0x2e 0x3d 0x4c 0x5b 0x6a 0x79 0x88 0x97 0xa6 0xb5"))

    def test_the_split_is_a_fixed_function_of_the_text(self):
        digest = ex.paragraph_hash("some paragraph")
        self.assertEqual(digest, ex.paragraph_hash("some paragraph"))
        heldout = sum(ex.is_heldout(ex.paragraph_hash(f"paragraph {i}")) for i in range(5000))
        self.assertTrue(50 <= heldout <= 150, heldout)  # about 2 %


if __name__ == "__main__":
    unittest.main(verbosity=1)
