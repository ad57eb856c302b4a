# A copy of ../shared/peers/triton_autotune.py (the anchor of issue #21), run by bench_tune on the GPU machine.
# What Triton's autotune costs in a fresh process, with and without cache_results.
import os, sys, time, json
t0 = time.perf_counter()
import torch, triton, triton.language as tl
cache_results = sys.argv[1] == "1"
configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512, 1024, 2048) for w in (4, 8)]
@triton.autotune(configs=configs, key=["n"], cache_results=cache_results)
@triton.jit
def square(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0); offs = pid * BLOCK + tl.arange(0, BLOCK); m = offs < n
    x = tl.load(x_ptr + offs, mask=m); tl.store(y_ptr + offs, x * x, mask=m)
n = 1 << 24
x = torch.randn(n, device="cuda"); y = torch.empty_like(x); torch.cuda.synchronize()
t1 = time.perf_counter()
square[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n); torch.cuda.synchronize()
t2 = time.perf_counter()
square[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n); torch.cuda.synchronize()
t3 = time.perf_counter()
assert torch.allclose(y, x * x)
print(json.dumps({"cache_results": cache_results, "first_call_ms": round((t2 - t1) * 1e3, 1), "second_call_ms": round((t3 - t2) * 1e3, 3), "best": str(square.best_config)}))
