"""Profile kjit's shipped softmax next to torch's, as the lecture does with torch.profiler.

    PYTHONPATH=build/python python3 examples/python/profile_softmax.py [trace.json]

Prints the profiler's table and writes a Chrome trace (chrome://tracing, ui.perfetto.dev).
Without a GPU it compiles the kernel for sm_90 and says why it did not run.
"""
import pathlib
import sys

import kjit

root = pathlib.Path(__file__).resolve().parents[2]
program = kjit.read_program(str(root / "kernels_src" / "softmax.cu")).instantiate("kjit::softmax_fused<float, 4, 256, 4>")

if not (kjit.driver_available() and kjit.device_count() > 0):
    r = kjit.compile(program, arch="sm_90")
    print(f"compiled kjit::softmax_fused<float, 4, 256, 4> for sm_90 ({r.outcome}); not run: "
          f"{kjit.driver_unavailable_reason() or 'no CUDA device'}")
    raise SystemExit(0)

import torch  # noqa: E402

softmax = kjit.load(program).kernel("kjit::softmax_fused<float, 4, 256, 4>")
rows, cols = 4096, 1024
x = torch.randn(rows, cols, device="cuda")
y = torch.empty_like(x)
for _ in range(3):  # warm up: the first calls load and tune torch's kernels
    softmax[rows, 256](x, y, cols)
    torch.softmax(x, dim=1)
torch.cuda.synchronize()

with kjit.profile() as p:
    for _ in range(10):
        with kjit.range("kjit softmax"):
            softmax[rows, 256](x, y, cols)
        with kjit.range("torch softmax"):
            torch.softmax(x, dim=1)
if not p.active:
    print(f"not profiled: {p.message}", file=sys.stderr)
    raise SystemExit(0)
print(p.table(sort_by="gpu_total", limit=10))
torch.testing.assert_close(y, torch.softmax(x, dim=1))
trace = sys.argv[1] if len(sys.argv) > 1 else "softmax_trace.json"
p.export_chrome_trace(trace)
print(f"trace: {trace}")
