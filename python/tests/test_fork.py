# fork() after a compile (issue #40 item 18): os.fork and multiprocessing's fork start method (as
# PyTorch's DataLoader workers use it) give a child that compiles at once, exits at once and keeps
# its own work; with a parent thread compiling at the moment of the fork too. No GPU needed.
import os
import threading
import time

import pytest

import kjit
from conftest import SQUARE

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")


def wait_exit(pid, seconds=20.0):
    """The child's exit status, or None when it is still there after `seconds` (then it is killed)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), time.monotonic() - (end - seconds)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None, seconds


def child_compiles(rt, define):
    try:
        r = rt.compile(kjit.Program("fork_child.cu", SQUARE), arch="sm_90", defines={"CHILD": define})
        os._exit(0 if r.outcome == "compiled" and "square_matrix_kernel" in r.ptx else 3)
    except BaseException:  # noqa: BLE001  (a child reports by its exit code)
        os._exit(4)


@pytest.mark.parametrize("delay_ms", [0, 5, 50])
def test_a_child_forked_after_a_compile_compiles_and_exits_at_once(cache_dir, delay_ms):
    rt = kjit.Runtime(cache_dir=str(cache_dir))
    rt.compile(kjit.Program("fork_parent.cu", SQUARE), arch="sm_90")
    time.sleep(delay_ms / 1000)
    pid = os.fork()
    if pid == 0:
        child_compiles(rt, delay_ms + 1)
    code, took = wait_exit(pid)
    assert code == 0, f"child exit {code} after {took:.1f} s"
    assert took < 10, f"the child took {took:.1f} s to compile and exit"
    # The child's compile is the child's: the parent finds it on the shared disk cache.
    again = rt.compile(kjit.Program("fork_child.cu", SQUARE), arch="sm_90", defines={"CHILD": delay_ms + 1})
    assert again.outcome == "hit"


def test_a_fork_while_a_parent_thread_compiles(cache_dir):
    rt = kjit.Runtime(cache_dir=str(cache_dir))
    rt.compile(kjit.Program("fork_parent.cu", SQUARE), arch="sm_90")
    stop = threading.Event()

    def keep_compiling():
        n = 0
        while not stop.is_set():
            rt.compile(kjit.Program("busy.cu", SQUARE), arch="sm_90", defines={"N": n})
            n += 1

    t = threading.Thread(target=keep_compiling)
    t.start()
    try:
        time.sleep(0.05)
        pids = []
        for i in range(3):
            pid = os.fork()
            if pid == 0:
                child_compiles(rt, 100 + i)
            pids.append(pid)
            time.sleep(0.02)
        for pid in pids:
            code, took = wait_exit(pid)
            assert code == 0 and took < 10, f"child exit {code} after {took:.1f} s"
    finally:
        stop.set()
        t.join()


def _worker(cache, n):  # a multiprocessing child: compiles, then exits through sys.exit (exit handlers run)
    import sys
    rt = kjit.Runtime(cache_dir=cache)
    r = rt.compile(kjit.Program("mp_child.cu", SQUARE), arch="sm_90", defines={"MP": n})
    sys.exit(0 if "square_matrix_kernel" in r.ptx else 3)


def test_multiprocessing_fork_workers_after_a_compile_exit_at_once(cache_dir):
    import multiprocessing
    rt = kjit.Runtime(cache_dir=str(cache_dir))
    rt.compile(kjit.Program("mp_parent.cu", SQUARE), arch="sm_90")
    ctx = multiprocessing.get_context("fork")  # as PyTorch's DataLoader workers start by default on Linux
    workers = [ctx.Process(target=_worker, args=(str(cache_dir), n)) for n in range(3)]
    start = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join(20)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert time.monotonic() - start < 15
    for n in range(3):  # each worker's compile is on the disk for the parent
        assert rt.compile(kjit.Program("mp_child.cu", SQUARE), arch="sm_90", defines={"MP": n}).outcome == "hit"
