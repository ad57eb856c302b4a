"""Where the peers table's "warm" and "hot" phases go (bench/peers: the first request of a new
process with the kernel on disk, and the second request in that process; request + launch +
sync), kjit's Python package against CuPy, step by step.

    PYTHONPATH=build/python python3 bench/python/hot_breakdown.py [processes]

Each sample is a fresh process, as in bench/peers (the disk cache warmed before): it times its
first request and launch (the peers' "warm"), the second (their "hot") and a third step by step,
once each, with perf_counter_ns. Prints the median of each step over the processes, in us,
and kjit's total over CuPy's measured in the same run.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SRC = r"""
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) result[row * width + col] = matrix[row * width + col] * matrix[row * width + col];
}
"""

KJIT_CHILD = r"""
import json, sys, time
import kjit, torch
src, cache = sys.argv[1], sys.argv[2]
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
xs = [torch.rand(48, 64, device="cuda") + 0.5 for _ in range(3)]
rs = [torch.full_like(x, float("nan")) for x in xs]
torch.cuda.synchronize()
ns = time.perf_counter_ns
def once(x, r):
    t0 = ns(); mod = kjit.load_inline(name="square", cuda_sources=src, functions=["square_matrix_kernel"],
                                    extra_cuda_cflags=["-O2"], build_directory=cache)
    t1 = ns(); k = mod.square_matrix_kernel
    t2 = ns(); k[(4, 3), (16, 16)](x, r, 64, 48)
    t3 = ns(); torch.cuda.synchronize()
    t4 = ns()
    return {"request": (t1 - t0) / 1e3, "lookup": (t2 - t1) / 1e3, "launch": (t3 - t2) / 1e3,
            "sync": (t4 - t3) / 1e3, "total": (t4 - t0) / 1e3}
first = once(xs[0], rs[0])
second = once(xs[1], rs[1])
third = once(xs[2], rs[2])
assert all(torch.equal(r, x * x) for x, r in zip(xs, rs))
print(json.dumps({"first": first, "second": second, "third": third}))
"""

CUPY_CHILD = r"""
import json, sys, time
import cupy as cp
src = sys.argv[1]
cp.zeros(1); cp.cuda.Device(0).synchronize()
xs = [cp.random.rand(48, 64, dtype=cp.float32) + 0.5 for _ in range(3)]
rs = [cp.full_like(x, cp.nan) for x in xs]
cp.cuda.Device(0).synchronize()
ns = time.perf_counter_ns
def once(x, r):
    t0 = ns(); k = cp.RawKernel(src, "square_matrix_kernel")
    t1 = ns()
    t2 = ns(); k((4, 3), (16, 16), (x, r, cp.int32(64), cp.int32(48)))
    t3 = ns(); cp.cuda.Device(0).synchronize()
    t4 = ns()
    return {"request": (t1 - t0) / 1e3, "lookup": (t2 - t1) / 1e3, "launch": (t3 - t2) / 1e3,
            "sync": (t4 - t3) / 1e3, "total": (t4 - t0) / 1e3}
first = once(xs[0], rs[0])
second = once(xs[1], rs[1])
third = once(xs[2], rs[2])
assert all(bool(cp.array_equal(r, x * x)) for x, r in zip(xs, rs))
print(json.dumps({"first": first, "second": second, "third": third}))
"""


def samples(code, args, n):
    out = []
    for _ in range(n):
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
        out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return out, None


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as cache:
        for warm_up in ([KJIT_CHILD, SRC, cache], [CUPY_CHILD, SRC]):  # each one's disk cache holds the kernel
            subprocess.run([sys.executable, "-c", *warm_up], capture_output=True, timeout=300)
        peers = {"kjit (Python)": samples(KJIT_CHILD, [SRC, cache], n), "CuPy": samples(CUPY_CHILD, [SRC], n)}
    steps = ("request", "lookup", "launch", "sync", "total")
    print(f"warm (first) and hot (second) calls step by step, median of {n} fresh processes, us "
          f"({time.strftime('%Y-%m-%d')})")
    totals = {}
    for call in ("first", "second", "third"):
        print(f"{call} call:      " + "".join(f"{s:>10}" for s in steps))
        for name, (rows, err) in peers.items():
            if rows is None:
                print(f"  {name:<14} failed: {err}")
                continue
            med = {s: statistics.median(r[call][s] for r in rows) for s in steps}
            totals[(name, call)] = med["total"]
            print(f"  {name:<14}" + "".join(f"{med[s]:>10.1f}" for s in steps))
        if ("kjit (Python)", call) in totals and ("CuPy", call) in totals:
            print(f"  kjit / CuPy total: {totals[('kjit (Python)', call)] / totals[('CuPy', call)]:.2f}x")


if __name__ == "__main__":
    main()
