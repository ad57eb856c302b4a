"""Where a Python launch's time goes: kjit's binding in steps, torch tensors against plain ints.

    PYTHONPATH=build/python python3 bench/python/launch_breakdown.py [launches]

Each row enqueues the same 16x16 launch `launches` times (then one sync) and prints microseconds
per launch, median of 5 runs, and the ratio to the first row measured in the same run (the
launcher reused with int arguments and an explicit stream: the binding's floor above the driver).
The tensors' check (element type, layout, device; #49) costs the difference between the
"2 tensors" row and the "2 tensors as kjit.raw" row (kjit.raw skips the element-type and layout
checks; the device is read either way), per tensor half of it.
"""
import statistics
import sys
import time

import kjit
import torch

SRC = r"""
extern "C" __global__ void square(const float* x, float* y, int w, int h) {
  int i = threadIdx.y * w + threadIdx.x;
  if (threadIdx.x < w && threadIdx.y < h) y[i] = x[i] * x[i];
}
// The same with its addresses as integers: the floor row passes plain ints.
extern "C" __global__ void square_at(unsigned long long x, unsigned long long y, int w, int h) {
  int i = threadIdx.y * w + threadIdx.x;
  if (threadIdx.x < w && threadIdx.y < h) ((float*)y)[i] = ((const float*)x)[i] * ((const float*)x)[i];
}
"""


def per_launch(fn, n):
    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(runs)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    mod = kjit.load_inline(name="square_bd", cuda_sources=SRC, functions=["square", "square_at"])
    k = mod.square
    x = torch.rand(16, 16, device="cuda") + 0.5
    y = torch.full_like(x, float("nan"))
    xp, yp = x.data_ptr(), y.data_ptr()
    s = torch.cuda.current_stream().cuda_stream
    launcher = k[(1, 1), (16, 16), 0, s]
    bound = k.bind((1, 1), (16, 16), stream=s)
    bound_current = k.bind((1, 1), (16, 16))
    at = mod.square_at[(1, 1), (16, 16), 0, s]
    default = k[(1, 1), (16, 16)]
    rx, ry = kjit.raw(x), kjit.raw(y)
    rows = [
        ("launcher reused, int pointers, explicit stream", lambda: at(xp, yp, 16, 16)),
        ("launcher reused, 2 tensors, explicit stream", lambda: launcher(x, y, 16, 16)),
        ("launcher reused, 2 tensors as kjit.raw (no type/layout check)", lambda: launcher(rx, ry, 16, 16)),
        ("k.bind(grid, block, stream=s) reused, 2 tensors, 2 ints", lambda: bound(x, y, 16, 16)),
        ("k.bind(grid, block) reused, torch's current stream", lambda: bound_current(x, y, 16, 16)),
        ("launcher reused, 2 tensors, torch's current stream", lambda: default(x, y, 16, 16)),
        ("k[grid, block](2 tensors, 2 ints) (as users write it)", lambda: k[(1, 1), (16, 16)](x, y, 16, 16)),
        ("k.launch(grid=, block=, args=(...)) keywords", lambda: k.launch(grid=(1, 1), block=(16, 16), args=(x, y, 16, 16))),
        ("torch: y.copy_(x) (a torch op, for scale)", lambda: y.copy_(x)),
    ]
    floor = None
    print(f"{torch.cuda.get_device_name()}, {time.strftime('%Y-%m-%d')}, {n} launches a run, median of 5")
    for name, fn in rows:
        us = per_launch(fn, n)
        floor = floor or us
        print(f"{name:62s} {us:7.2f} us  {us / floor:5.2f}x", flush=True)
    torch.cuda.synchronize()
    y.fill_(float("nan"))
    k[(1, 1), (16, 16)](x, y, 16, 16)
    torch.cuda.synchronize()
    assert torch.equal(y, x * x), "wrong result"


if __name__ == "__main__":
    main()
