"""torch.profiler's cost, the anchor for bench_profile: 10,000 launches of a tiny kernel
unprofiled and under torch.profiler (CPU + CUDA activities), key_averages().table() over them,
and the Chrome trace's size. Prints one JSON line. Needs PyTorch and a GPU."""
import json, os, statistics, sys, tempfile, time

import torch
from torch.profiler import ProfilerActivity, profile

launches = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
x = torch.ones(32, device="cuda")


def per_launch_us(n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


per_launch_us(2000)
off, on, table_s, trace_mb = [], [], [], []
for _ in range(rounds):
    off.append(per_launch_us(launches))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        on.append(per_launch_us(launches))
    t0 = time.perf_counter()
    prof.key_averages().table(sort_by="cuda_time_total", row_limit=20)
    table_s.append(time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        trace_mb.append(os.path.getsize(path) / 1e6)
print(json.dumps({"torch": torch.__version__, "launches": launches, "unprofiled_us": statistics.median(off),
                  "profiled_us": statistics.median(on), "table_s": statistics.median(table_s),
                  "trace_mb": statistics.median(trace_mb)}))
