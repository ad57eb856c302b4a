# GPU tests of the device rule (marker gpu; two devices, skipped with fewer): a launch runs on the
# device of its tensors, on torch's current stream there (CuPy's for CuPy arrays), whatever the
# caller's current device is, and leaves the caller's current device as it found it. Every order
# of launches on cuda:0 and cuda:1 tensors, inside and outside torch.cuda.device(...) and
# torch.cuda.stream(...), from two threads at once; random inputs, NaN-poisoned outputs.
import contextlib
import itertools
import math
import random
import threading

import pytest

import kjit
from conftest import SQUARE

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="torch is not installed: the device tests launch on torch tensors")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip(f"the device tests need two CUDA devices; torch sees {torch.cuda.device_count()}")
    return torch


@pytest.fixture(scope="module")
def square():
    return kjit.load_inline(name="square_devices", cuda_sources=SQUARE,
                            functions=["square_matrix_kernel"]).square_matrix_kernel


def launch_and_check(torch, k, device, rng):
    """One launch on new tensors of `device` from wherever the caller is; the caller's device is kept."""
    h, w = rng.randint(1, 90), rng.randint(1, 130)
    x = torch.randn(h, w, device=f"cuda:{device}")
    y = torch.full_like(x, float("nan"))
    before = torch.cuda.current_device()
    k[(math.ceil(w / 16), math.ceil(h / 16)), (16, 16)](x, y, w, h)
    assert torch.cuda.current_device() == before, "the launch moved the caller's current device"
    with torch.cuda.device(device):
        expected = x * x  # on torch's current stream of the tensors' device, as the launch
    torch.cuda.synchronize(device)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)


def places(torch):
    """Where the caller stands: nowhere special, torch.cuda.device(d), torch.cuda.stream(a stream of d)."""
    streams = [torch.cuda.Stream(device=d) for d in (0, 1)]
    return [("outside", contextlib.nullcontext), ("device(0)", lambda: torch.cuda.device(0)),
            ("device(1)", lambda: torch.cuda.device(1)), ("stream(cuda:0)", lambda: torch.cuda.stream(streams[0])),
            ("stream(cuda:1)", lambda: torch.cuda.stream(streams[1]))]


def test_the_issues_sequence(torch, square):
    # A launch on cuda:1 inside torch.cuda.device(1), then one on new cuda:1 tensors after it.
    torch.cuda.set_device(0)
    rng = random.Random(1)
    with torch.cuda.device(1):
        launch_and_check(torch, square, 1, rng)
    assert torch.cuda.current_device() == 0
    launch_and_check(torch, square, 1, rng)
    launch_and_check(torch, square, 0, rng)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


@pytest.mark.parametrize("current", [0, 1])
def test_every_order_in_every_place(torch, square, current):
    torch.cuda.set_device(current)
    rng = random.Random(current)
    for name, place in places(torch):
        for order in itertools.product((0, 1), repeat=3):
            with place():
                inside = torch.cuda.current_device()
                for device in order:
                    launch_and_check(torch, square, device, rng)
                assert torch.cuda.current_device() == inside, name
            assert torch.cuda.current_device() == current, name


def test_two_threads_at_once(torch, square):
    errors = []
    start = threading.Barrier(2)

    def work(seed):
        rng = random.Random(seed)
        torch.cuda.set_device(seed % 2)
        chosen = places(torch)
        try:
            start.wait()
            for _ in range(60):
                with chosen[rng.randrange(len(chosen))][1]():
                    launch_and_check(torch, square, rng.randrange(2), rng)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in (10, 11)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_mixed_devices_are_refused_naming_both(torch, square):
    torch.cuda.set_device(0)
    x = torch.randn(8, 8, device="cuda:0")
    y = torch.full_like(x, float("nan"), device="cuda:1")
    with pytest.raises(kjit.ArgumentError, match=r"cuda:1.*cuda:0|cuda:0.*cuda:1"):
        square[(1, 1), (16, 16)](x, y, 8, 8)
    assert torch.cuda.current_device() == 0


def test_a_stream_of_another_device_is_refused_naming_both(torch, square):
    torch.cuda.set_device(1)
    x = torch.randn(8, 8, device="cuda:0")
    y = torch.full_like(x, float("nan"))
    other = torch.cuda.Stream(device=1)
    with pytest.raises(kjit.ArgumentError, match=r"cuda:1.*cuda:0"):
        square.launch((1, 1), (16, 16), (x, y, 8, 8), stream=other)
    with pytest.raises(kjit.ArgumentError, match=r"cuda:1.*cuda:0"):
        square[(1, 1), (16, 16), 0, other](x, y, 8, 8)
    assert torch.cuda.current_device() == 1
    # A stream of the tensors' device is taken, from any current device.
    mine = torch.cuda.Stream(device=0)
    square.launch((1, 1), (16, 16), (x, y, 8, 8), stream=mine)
    assert torch.cuda.current_device() == 1
    mine.synchronize()
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    torch.cuda.set_device(0)


def test_cupy_arrays_on_the_other_device(torch, square):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    with cp.cuda.Device(1):
        x = cp.random.standard_normal((37, 45), dtype=cp.float32)
        y = cp.full_like(x, cp.nan)
    with cp.cuda.Device(0):
        square[(3, 3), (16, 16)](x, y, 45, 37)
        assert cp.cuda.runtime.getDevice() == 0
    with cp.cuda.Device(1):
        cp.cuda.get_current_stream().synchronize()
        assert cp.array_equal(y, x * x)
