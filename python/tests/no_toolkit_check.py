"""Run by scripts/gpu-devices.sh (step pip) with the CUDA toolkit hidden from the process: kjit,
installed by pip, imports, finds NVRTC and the CUDA headers in the CUDA packages torch brought
(site-packages/nvidia/cu13), says where (kjit.info()), and compiles and runs a kernel that
includes cuda_fp16.h on a torch tensor; a kernel that includes a CCCL header (which torch's
packages do not ship) fails with a log naming the package that has it. Not a pytest file: it
needs the toolkit gone first."""
import json
import math

import kjit  # before torch: kjit finds libnvrtc by itself

import torch

info = kjit.info()
print(json.dumps(info, indent=1))
assert "nvidia" in info["nvrtc_library"] and "site-packages" in info["nvrtc_library"], info
assert info["include_dirs"] and all("nvidia" in d for d in info["include_dirs"]), info
src = r"""
#include <cuda_fp16.h>
__global__ void halve(const float* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(x[i] * 0.5f);
}
"""
k = kjit.load_inline(name="no_toolkit", cuda_sources=src, functions=["halve"]).halve
x = torch.randn(1000, device="cuda")
y = torch.full((1000,), float("nan"), device="cuda", dtype=torch.float16)
k[math.ceil(1000 / 128), 128](x, y, 1000)
torch.testing.assert_close(y, (x * 0.5).half(), rtol=0, atol=0)
try:
    kjit.load_inline(name="no_toolkit_cub", cuda_sources="#include <cub/cub.cuh>\n__global__ void k() {}\n")
    raise AssertionError("a CCCL header compiled without the toolkit")
except kjit.CompileError as e:
    assert "nvidia-cuda-cccl" in e.log and "include folders" in e.log, e.log
    print("missing header named:", [line for line in e.log.splitlines() if line.startswith("kjit:")][0])
print("no toolkit: NVRTC", info["nvrtc_version"], "from", info["nvrtc_library"], "- kernel with cuda_fp16.h right")
