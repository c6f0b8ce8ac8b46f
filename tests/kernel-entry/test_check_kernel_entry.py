#!/usr/bin/env python3
"""The kernel-entry check's own cases: it must pass a kernel that starts with kernel_entry() and
fail one that does anything first, one whose entry is commented out, and a template kernel with
launch bounds that forgot it; declarations are not definitions."""
import pathlib
import subprocess
import sys
import tempfile

CHECK = pathlib.Path(__file__).resolve().parents[2] / "tools/lint/check_kernel_entry.py"

CASES = {
    "good.hip": ("template <int N>\n__global__ void __launch_bounds__(256) good_kernel(float* x) {\n"
                 "  kernel_entry();\n  x[0] = 1;\n}\n__global__ void declared_kernel(int);\n", 0),
    "late.hip": ("__global__ void late_kernel(float* x) {\n  x[0] = 1;\n  kernel_entry();\n}\n", 1),
    "commented.hip": ("__global__ void commented_kernel(float* x) {\n  // kernel_entry();\n  x[0] = 1;\n}\n", 1),
    "bounds.hpp": ("template <int N>\n__global__ void __launch_bounds__(N * 32)\n    bounded_kernel(int a) {\n"
                   "  __shared__ float s[N];\n  kernel_entry();\n}\n", 1),
}


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (text, want) in CASES.items():
            path = pathlib.Path(tmp) / name
            path.write_text(text)
            got = subprocess.run([sys.executable, str(CHECK), "--files", str(path)], capture_output=True, text=True)
            named = want == 0 or ("_kernel does not start with" in got.stdout)
            if got.returncode != want or not named:
                print(f"{name}: exit {got.returncode} (want {want}); output: {got.stdout.strip()!r}")
                failures += 1
    print("ok" if failures == 0 else f"{failures} case(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
