"""What a torch operator costs around a kjit launch, eager: kjit.torch.op against the same
allocation and launch written as a plain Python function, wrapped by torch.library.custom_op and
by Library.define/impl, all in one run.

    PYTHONPATH=build/python python3 bench/python/op_overhead.py [calls]

Each row calls the op `calls` times (then one sync): microseconds per call, median of 5 runs. The
rows are measured 3 times over, interleaved (3 rounds in one process); the table gives each row's
median over the rounds and its difference to the plain function as the median of the 3 rounds'
differences (#58's target for kjit.torch.op: at most +1.5 us). Results are checked.
"""
import statistics
import sys
import time

import kjit
import kjit.torch
import torch

SRC = r"""
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) result[row * width + col] = matrix[row * width + col] * matrix[row * width + col];
}
"""


def per_call(fn, n):
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
    k = kjit.load_inline(name="square_op_bench", cuda_sources=SRC, functions=["square_matrix_kernel"]).square_matrix_kernel

    def plain(matrix, width, height):
        result = torch.empty_like(matrix)
        k[((width + 15) // 16, (height + 15) // 16), (16, 16)](matrix, result, width, height)
        return result

    op = kjit.torch.op(k, "kjit_bench::square",
                       outputs={"result": lambda matrix, width, height: torch.empty_like(matrix)},
                       grid=lambda matrix, width, height: ((width + 15) // 16, (height + 15) // 16),
                       block=(16, 16))

    @torch.library.custom_op("kjit_bench::square_custom_op", mutates_args=())
    def custom(matrix: torch.Tensor, width: int, height: int) -> torch.Tensor:
        return plain(matrix, width, height)

    @custom.register_fake
    def _(matrix, width, height):
        return torch.empty_like(matrix)

    lib = torch.library.Library("kjit_bench", "FRAGMENT")
    lib.define("square_library(Tensor matrix, SymInt width, SymInt height) -> Tensor")
    lib.impl("square_library", plain, "CUDA")
    library_op = torch.ops.kjit_bench.square_library.default

    x = torch.rand(16, 16, device="cuda") + 0.5
    rows = [
        ("plain function: torch.empty_like + k[grid, block](...)", lambda: plain(x, 16, 16)),
        ("kjit.torch.op (eager)", lambda: op(x, 16, 16)),
        ("Library.define/impl around the plain function", lambda: library_op(x, 16, 16)),
        ("torch.library.custom_op around the plain function", lambda: custom(x, 16, 16)),
    ]
    for _, fn in rows:
        torch.testing.assert_close(fn(), x * x, rtol=0, atol=0)
    print(f"{torch.cuda.get_device_name()}, {time.strftime('%Y-%m-%d')}, torch {torch.__version__}, "
          f"{n} calls a run, median of 5")
    rounds = [[per_call(fn, n) for _, fn in rows] for _ in range(3)]
    for i, (name, _) in enumerate(rows):
        us = statistics.median(r[i] for r in rounds)
        over = statistics.median(r[i] - r[0] for r in rounds)
        each = ", ".join(f"{r[i] - r[0]:+.2f}" for r in rounds)
        print(f"{name:58s} {us:7.2f} us  {over:+6.2f} us  (rounds: {each})", flush=True)


if __name__ == "__main__":
    main()
