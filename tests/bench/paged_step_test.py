#!/usr/bin/env python3
"""bench/gpu/paged_step.py on a made-up kernel trace whose answers are known.

    paged_step_test.py SCRIPT

Three steps of 10 us, each the same: kernels on two streams (one of them overlapping the other),
one 4 MiB expert copy that overlaps the kernels for 2 of its 4 us, a 64-byte copy (below the
expert-copy threshold, so it counts as nothing), the host blocked 2 us in an event synchronize,
and 1 us with nothing running. A trace without copies is refused with a message.
"""
import os
import subprocess
import sys
import tempfile

HEADER = "start_ns,end_ns,stream,grid_x,grid_y,grid_z,block_x,registers,correlation,name\n"


def row(start, end, stream, name):
    return f"{start},{end},{stream},1,1,1,128,32,0,{name}\n"


def trace(with_copies=True):
    out = [HEADER, row(0, 1000, 7, "void moepage::ds4::gpu::greedy_kernel(float const*)")]
    for k in range(3):
        t = 1000 + 10000 * k
        out += [row(t, t + 2000, 7, "void moepage::ds4::gpu::hc_mix_kernel<4>(MixArgs)"),
                row(t + 4000, t + 7000, 7, "void moepage::ds4::gpu::expert_kernel()"),
                row(t + 6000, t + 8000, 9, "void moepage::ds4::gpu::shared_expert()"),
                row(t + 2000, t + 4000, 4294967295, "api:cudaEventSynchronize_v3020"),  # as CUPTI names it
                row(t + 3000, t + 3100, 4294967295, "api:cudaLaunchKernelExC_v11060"),
                row(t + 9000, t + 10000, 7, "void moepage::ds4::gpu::greedy_kernel(float const*)")]
        if with_copies:
            out += [row(t + 1000, t + 5000, 20, f"memcpy:HtoD:{4 << 20}"),
                    row(t + 8000, t + 8500, 7, "memcpy:HtoD:64")]
    return "".join(out)


def main(script):
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernels.csv")
        with open(path, "w") as fh:
            fh.write(trace())
        got = subprocess.run([sys.executable, script, path, "1", "3"], capture_output=True, text=True)
        if got.returncode != 0:
            failures.append(f"exit {got.returncode}: {got.stderr.strip()}")
        expected = [
            "steps 1..2 of 4: wall 10.0 us a step (median 10.0)",
            "  both           2.0 us  20.0%  kernels and expert copies at once",
            "  compute        5.0 us  50.0%  kernels only, link idle",
            "  bytes          2.0 us  20.0%  no kernel: waiting for expert bytes",
            "  host           1.0 us  10.0%  neither: waiting for the host",
            "  host blocked in the runtime's waits 2.0 us; 1.0 expert copies, 4.2 MB, link busy 4.0 us at 1048.58 GB/s",
        ]
        lines = got.stdout.splitlines()
        for want in expected:
            if want not in lines:
                failures.append(f"missing line {want!r}")
        with open(path, "w") as fh:
            fh.write(trace(with_copies=False))
        got = subprocess.run([sys.executable, script, path], capture_output=True, text=True)
        if got.returncode == 0 or "has no copies" not in got.stderr:
            failures.append(f"a trace without copies: exit {got.returncode}, stderr {got.stderr.strip()!r}")
    if failures:
        print("paged_step_test: FAILED\n  " + "\n  ".join(failures))
        print("output was:\n" + got.stdout)
        return 1
    print("paged_step_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
