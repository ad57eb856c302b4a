# CPU test: Runtime.stats() is C++'s counter list (kjit::for_each_counter), every counter of
# RuntimeStats, the remote tier's too, counting a compile, then a disk hit in another Runtime.
import kjit

SOURCE = "__global__ void k(int* p, int v) { *p = v; }"
NAMES = {"registry_hits", "disk_hits", "misses", "compiles", "waits", "damaged", "evictions", "bytes_written",
         "bytes_read", "store_failures", "remote_requests", "remote_hits", "remote_misses", "remote_rejected",
         "remote_errors", "remote_timeouts", "remote_writes", "remote_dropped", "remote_bytes_read",
         "remote_bytes_written", "remote_latency_us", "remote_http_hits", "remote_http_errors", "remote_backfills",
         "remote_shard_down"}


def test_every_counter_and_a_compile_then_a_hit(cache_dir):
    rt = kjit.Runtime(cache_dir=str(cache_dir))
    s = rt.stats()
    assert set(s) == NAMES
    assert all(v == 0 for v in s.values())
    rt.compile(kjit.Program("stats.cu", SOURCE), arch="sm_90")
    s = rt.stats()
    assert s["compiles"] == 1
    rt2 = kjit.Runtime(cache_dir=str(cache_dir))
    rt2.compile(kjit.Program("stats.cu", SOURCE), arch="sm_90")
    s2 = rt2.stats()
    assert s2["disk_hits"] == 1 and s2["compiles"] == 0
