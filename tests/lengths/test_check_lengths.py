#!/usr/bin/env python3
"""Tests of tools/lint/check_lengths.py: what its C++ heuristic counts as a function, how long it
says each one is, and that files and functions over the limits are reported (exit 1)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "..", "..", "tools", "lint", "check_lengths.py")
sys.path.insert(0, os.path.dirname(CHECKER))
import check_lengths  # noqa: E402


def body(n):
    """n lines of statements."""
    return "".join(f"  x += {i};\n" for i in range(n))


class CppFunctions(unittest.TestCase):
    def names(self, text):
        return [(name, first, last) for name, first, last in check_lengths.cpp_functions(text)]

    def test_free_function_spans_signature_to_closing_brace(self):
        text = "int f(int a,\n      int b) {\n" + body(3) + "}\n"
        self.assertEqual(self.names(text), [("f", 1, 6)])

    def test_namespaces_classes_and_members(self):
        text = ("namespace a {\nnamespace {\n"
                "class C : public B {\n public:\n  C() : x_(1), y_{2} {\n    go();\n  }\n"
                "  int get() const noexcept override { return x_; }\n"
                " private:\n  int x_ = 0, y_{0};\n};\n"
                "}  // namespace\n"
                "void C::run() {\n  if (x) {\n    y();\n  }\n}\n"
                "}  // namespace a\n")
        self.assertEqual(self.names(text), [("C", 5, 7), ("get", 8, 8), ("C::run", 13, 17)])

    def test_braces_in_comments_strings_and_preprocessor_lines_are_ignored(self):
        text = ('#define OPEN {\n'
                '/* { */ void f() {  // }\n'
                '  const char* s = "}}}";\n'
                '  const char c = \'}\';\n'
                '  const char* r = R"x(})x";\n'
                '  int n = 1\'000;\n'
                '}\n'
                '#define X 1 /* a comment\n'
                '   that goes on { */\n'
                'int g() { return 0; }\n')
        self.assertEqual(self.names(text), [("f", 2, 7), ("g", 10, 10)])

    def test_initializers_and_default_arguments_are_not_functions(self):
        text = ("constexpr int kTable[] = {\n  1,\n  2,\n};\n"
                "struct S { int a; } s = {1};\n"
                "Handle make(const std::string& name, Options o = {}) {\n  return {};\n}\n"
                "enum class E { A, B };\n")
        self.assertEqual(self.names(text), [("make", 6, 8)])

    def test_lambdas_count_toward_their_function(self):
        text = "void f() {\n  auto g = [&](int x) {\n" + body(2) + "  };\n}\n"
        self.assertEqual(self.names(text), [("f", 1, 6)])

    def test_macro_before_a_struct_keeps_the_struct_a_scope(self):
        text = "MACRO(x) struct S {\n  void m() {\n  }\n};\n"
        self.assertEqual(self.names(text), [("m", 2, 3)])


class Limits(unittest.TestCase):
    def run_checker(self, files, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, text in files.items():
                path = os.path.join(tmp, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                paths.append(path)
            return subprocess.run([sys.executable, CHECKER, *extra, "--files", *paths], capture_output=True, text=True)

    def test_a_long_cpp_function_is_reported_with_its_length(self):
        r = self.run_checker({"a.cpp": "void big() {\n" + body(99) + "}\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("function big is 101 lines (limit 100)", r.stdout)
        r = self.run_checker({"a.cpp": "void ok() {\n" + body(98) + "}\n"})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_a_long_file_is_reported(self):
        r = self.run_checker({"a.sh": "echo\n" * 601})
        self.assertEqual(r.returncode, 1)
        self.assertIn("601 lines (limit 600)", r.stdout)
        self.assertEqual(self.run_checker({"a.sh": "echo\n" * 600}).returncode, 0)

    def test_python_functions_are_measured_exactly(self):
        text = "def f():\n" + "".join(f"    x = {i}\n" for i in range(100)) + "\n\ndef g():\n    pass\n"
        r = self.run_checker({"t.py": text})
        self.assertEqual(r.returncode, 1)
        self.assertIn("t.py:1: function f is 101 lines", r.stdout)
        self.assertNotIn("function g", r.stdout)

    def test_limits_are_options(self):
        r = self.run_checker({"a.cpp": "void f() {\n" + body(10) + "}\n"}, "--max-function", "5")
        self.assertEqual(r.returncode, 1)
        self.assertIn("function f is 12 lines (limit 5)", r.stdout)


class Tree(unittest.TestCase):
    def test_the_walk_skips_build_trees_and_exempts_kernels(self):
        with tempfile.TemporaryDirectory() as root:
            for rel in ("core/a.cpp", "build-nv/b.cpp", "tools/t.py", "arch/deepseek4/hip/k.hip", "README.md"):
                os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
                open(os.path.join(root, rel), "w").close()
            found = check_lengths.walk(root)
            self.assertEqual(found, ["arch/deepseek4/hip/k.hip", "core/a.cpp", "tools/t.py"])
            self.assertIsNotNone(check_lengths.exempt_reason("arch/deepseek4/hip/k.hip"))
            self.assertIsNone(check_lengths.exempt_reason("core/a.cpp"))


if __name__ == "__main__":
    unittest.main()
