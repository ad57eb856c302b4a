"""Where a new process's first load_inline goes when kjit's own driver table is made first or not
(the peers' "warm" phase: torch has made CUDA ready; kjit opens libcuda and asks cuGetProcAddress
for its entry points on its first driver call, which lands in the first request).

    PYTHONPATH=build/python python3 bench/python/first_call_driver.py

Median of 7 fresh processes each way, us: "as peers" (the first request pays the table) and
"driver first" (kjit.device_count() before it, timed apart as "driver").
"""
import json, subprocess, sys, statistics, tempfile
CHILD = r'''
import json, sys, time
import kjit, torch
src, cache, driver_first = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
x = torch.rand(48, 64, device="cuda") + 0.5; r = torch.full_like(x, float("nan")); torch.cuda.synchronize()
ns = time.perf_counter_ns
t0 = ns()
if driver_first: kjit.device_count(); kjit._kjit._current_device()
t1 = ns(); mod = kjit.load_inline(name="square", cuda_sources=src, functions=["square_matrix_kernel"], extra_cuda_cflags=["-O2"], build_directory=cache)
t2 = ns(); k = mod.square_matrix_kernel
t3 = ns(); k[(4, 3), (16, 16)](x, r, 64, 48)
t4 = ns(); torch.cuda.synchronize()
t5 = ns()
print(json.dumps({"driver": (t1-t0)/1e3, "request": (t2-t1)/1e3, "lookup": (t3-t2)/1e3, "launch": (t4-t3)/1e3, "sync": (t5-t4)/1e3, "total": (t5-t0)/1e3}))
'''
sys.path.insert(0, "bench/python")
from hot_breakdown import SRC
with tempfile.TemporaryDirectory() as cache:
    subprocess.run([sys.executable, "-c", CHILD, SRC, cache, "0"], capture_output=True)
    for first in ("0", "1"):
        rows = [json.loads(subprocess.run([sys.executable, "-c", CHILD, SRC, cache, first], capture_output=True, text=True).stdout.strip().splitlines()[-1]) for _ in range(7)]
        print("driver first" if first == "1" else "as peers", {k: round(statistics.median(r[k] for r in rows), 1) for k in rows[0]})
