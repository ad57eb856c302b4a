"""The lecture's square kernel, called on torch tensors through kjit.

    PYTHONPATH=build/python python3 examples/python/square.py

Prints tensor([[ 1.,  4.,  9.], [16., 25., 36.]], device='cuda:0'). Without a GPU it compiles the
kernel for sm_90 and says why it did not launch.
"""
import math

import kjit

cuda_src = r"""
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < height && col < width) {
    int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
"""

if not (kjit.driver_available() and kjit.device_count() > 0):
    r = kjit.compile(kjit.Program("square.cu", cuda_src), arch="sm_90")
    print(f"compiled square_matrix_kernel for sm_90 ({len(r.ptx)} bytes of PTX, {len(r.cubin)} bytes of cubin, "
          f"{r.outcome}); not launched: {kjit.driver_unavailable_reason() or 'no CUDA device'}")
    raise SystemExit(0)

import torch  # noqa: E402

mod = kjit.load_inline(name="square", cuda_sources=cuda_src, functions=["square_matrix_kernel"])
a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="cuda")
out = torch.empty_like(a)
h, w = a.shape
mod.square_matrix_kernel[(math.ceil(w / 16), math.ceil(h / 16)), (16, 16)](a, out, w, h)
print(out)
