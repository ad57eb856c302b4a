# GPU tests (marker gpu): kjit kernels on real torch tensors and CuPy arrays, random inputs and
# NaN-poisoned outputs. Skipped without a CUDA device; torch/CuPy tests skip without them.
import math
import threading

import numpy as np
import pytest

import kjit
from conftest import SQUARE

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def square():
    return kjit.load_inline(name="square", cuda_sources=SQUARE, functions=["square_matrix_kernel"]).square_matrix_kernel


def launch_square(k, x, y, shape=None):
    h, w = shape or x.shape
    k[(math.ceil(w / 16), math.ceil(h / 16)), (16, 16)](x, y, w, h)


def test_lecture_square_on_torch_tensors(torch, square):
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="cuda")
    y = torch.full_like(x, float("nan"))
    launch_square(square, x, y)
    assert torch.equal(y, torch.tensor([[1.0, 4.0, 9.0], [16.0, 25.0, 36.0]], device="cuda"))
    x = torch.randn(333, 517, device="cuda")
    y = torch.full_like(x, float("nan"))
    launch_square(square, x, y)
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)


def test_square_on_cupy_arrays(square):
    cp = pytest.importorskip("cupy")
    x = cp.random.standard_normal((129, 65), dtype=cp.float32)
    y = cp.full_like(x, cp.nan)
    launch_square(square, x, y)
    cp.cuda.get_current_stream().synchronize()
    assert cp.array_equal(y, x * x)


class DLPackOnly:
    """A producer that offers DLPack and nothing else (as JAX arrays do)."""

    def __init__(self, tensor):
        self._t = tensor

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_square_on_a_dlpack_only_producer(torch, square):
    x = torch.randn(64, 48, device="cuda")
    y = torch.full_like(x, float("nan"))
    launch_square(square, DLPackOnly(x), DLPackOnly(y), shape=x.shape)
    torch.cuda.synchronize()
    assert torch.equal(y, x * x)


def kernels_src(repo, file, *expressions):
    program = kjit.read_program(str(repo / "kernels_src" / file))
    for e in expressions:
        program.instantiate(e)
    return kjit.load(program)


def test_gelu_softmax_and_mean_from_kernels_src_against_torch(torch, repo):
    n = 1_000_003
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    gelu = kernels_src(repo, "gelu.cu", "kjit::gelu<float, 256, 1>").kernel("kjit::gelu<float, 256, 1>")
    gelu[math.ceil(math.ceil(n / 4) / 256), 256](x, y, n)
    torch.testing.assert_close(y, torch.nn.functional.gelu(x, approximate="tanh"), rtol=1e-5, atol=1e-5)

    rows, cols = 300, 1024
    a = torch.randn(rows, cols, device="cuda") * 4
    b = torch.full_like(a, float("nan"))
    softmax = kernels_src(repo, "softmax.cu", "kjit::softmax_fused<float, 4, 256, 4>")
    softmax.kernel("kjit::softmax_fused<float, 4, 256, 4>")[rows, 256](a, b, cols)
    torch.testing.assert_close(b, torch.softmax(a, dim=1), rtol=1e-5, atol=1e-6)

    blocks = 264
    partials = torch.full((blocks,), float("nan"), dtype=torch.float64, device="cuda")
    ticket = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.full((1,), float("nan"), device="cuda")
    mean = kernels_src(repo, "mean.cu", "kjit::mean<float, 512, 4>").kernel("kjit::mean<float, 512, 4>")
    mean[blocks, 512](x, n, partials, ticket, out)
    torch.testing.assert_close(out[0].double(), x.double().mean(), rtol=1e-5, atol=1e-6)


WIDTHS = r"""
__global__ void widths(signed char i8, unsigned char u8, short i16, unsigned short u16, int i32, unsigned u32,
                       long long i64, unsigned long long u64, float f32, double f64, bool flag,
                       long long* ints, unsigned long long* big, double* floats) {
  ints[0] = i8; ints[1] = u8; ints[2] = i16; ints[3] = u16; ints[4] = i32; ints[5] = u32; ints[6] = i64;
  ints[7] = flag;
  big[0] = u64;
  floats[0] = f32; floats[1] = f64;
}
"""


def test_every_scalar_width_reaches_the_kernel(torch):
    import random
    k = kjit.load(kjit.Program("widths.cu", WIDTHS)).widths
    rng = random.Random(11)
    for _ in range(20):
        v = [rng.randint(-2**7, 2**7 - 1), rng.randint(0, 2**8 - 1), rng.randint(-2**15, 2**15 - 1),
             rng.randint(0, 2**16 - 1), rng.randint(-2**31, 2**31 - 1), rng.randint(0, 2**32 - 1),
             rng.randint(-2**63, 2**63 - 1)]
        u64 = rng.randint(0, 2**64 - 1)
        f32 = float(np.float32(rng.uniform(-1e6, 1e6)))
        f64 = rng.uniform(-1e300, 1e300)
        flag = rng.random() < 0.5
        ints = torch.full((8,), -12345, dtype=torch.int64, device="cuda")
        big = torch.full((1,), -1, dtype=torch.int64, device="cuda")
        floats = torch.full((2,), float("nan"), dtype=torch.float64, device="cuda")
        k[1, 1](*v, u64, f32, f64, flag, ints, big, floats)
        assert ints.tolist() == v + [int(flag)]
        assert big.cpu().numpy().view(np.uint64)[0] == u64
        assert floats.tolist() == [f32, f64]


CONSTANT = r"""
__constant__ float coeffs[16];
__device__ int counter;
extern "C" __global__ void apply(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * coeffs[i % 16];
  if (i == 0) counter = n;
}
"""


def test_constant_table_from_numpy_and_read_back(torch):
    m = kjit.load(kjit.Program("constant.cu", CONSTANT))
    table = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    m.globals["coeffs"][:] = table
    assert np.array_equal(m.globals["coeffs"][:], table)
    assert np.array_equal(m.globals["coeffs"].numpy(np.float32), table)
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    m.apply[math.ceil(n / 128), 128](x, y, n)
    torch.cuda.synchronize()
    expected = x.cpu() * torch.from_numpy(np.resize(table, n))
    assert torch.equal(y.cpu(), expected)
    assert m.globals["counter"].numpy(np.int32)[0] == n
    m.globals["coeffs"][:] = torch.ones(16)
    assert np.array_equal(m.globals["coeffs"].numpy(np.float32), np.ones(16, np.float32))
    with pytest.raises(kjit.UsageError):
        m.globals["coeffs"][:] = np.ones(15, np.float32)


def test_stream_ordering_follows_torch(torch, square):
    n_rows, n_cols = 2048, 2048
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.randn(n_rows, n_cols, device="cuda")
        z = (x @ x) / 100  # a long torch op on the side stream
        y = torch.full_like(z, float("nan"))
        launch_square(square, z, y)  # the default: torch's current stream, the side one
    side.synchronize()
    torch.testing.assert_close(y, z * z, rtol=0, atol=0)
    z2 = (x @ x) / 50
    w = torch.full_like(z2, float("nan"))
    side.wait_stream(torch.cuda.current_stream())  # w's NaN fill, on the default stream, comes first
    with torch.cuda.stream(side):
        z3 = (z2 @ x) / 1000
    h, wd = z3.shape
    square[(math.ceil(wd / 16), math.ceil(h / 16)), (16, 16), 0, side](z3, w, wd, h)  # explicit stream=
    side.synchronize()
    torch.testing.assert_close(w, z3 * z3, rtol=0, atol=0)
    u = torch.full_like(z3, float("nan"))
    square.launch(grid=(math.ceil(wd / 16), math.ceil(h / 16)), block=(16, 16), args=(z3, u, wd, h),
                  stream=side.cuda_stream)
    side.synchronize()
    assert torch.equal(u, w)


def test_tensor_on_the_wrong_device_or_strided_is_refused(torch, square):
    x = torch.randn(4, 4)
    y = torch.full((4, 4), float("nan"), device="cuda")
    with pytest.raises(kjit.ArgumentError, match=r"argument 0 .*a torch.Tensor on the host \(cpu\)"):
        launch_square(square, x, y)
    with pytest.raises(TypeError, match=r"kernel takes square_matrix_kernel\(float const\*"):
        launch_square(square, y, 3.0)
    t = torch.randn(8, 8, device="cuda").t()
    with pytest.raises(kjit.ArgumentError, match=r"non-contiguous torch.Tensor.*strides \(1, 8\)"):
        square.launch(grid=1, block=(16, 16), args=(t, y, 4, 4))


def test_bind_launches_and_checks_every_call_as_a_subscript_launch(torch, square):
    # k.bind(grid, block, stream=, shared_mem=): bound once, called many times, each call checked.
    h, w = 45, 71
    grid = (math.ceil(w / 16), math.ceil(h / 16))
    side = torch.cuda.Stream()
    bound = square.bind(grid, (16, 16), stream=side.cuda_stream, shared_mem=0)
    current = square.bind(grid, (16, 16))  # stream=None: torch's current stream at each call
    assert type(bound) is type(square[grid, (16, 16)])
    for _ in range(4):
        x = torch.randn(h, w, device="cuda") + 3.0  # never zero
        y = torch.full_like(x, float("nan"))
        side.wait_stream(torch.cuda.current_stream())
        bound(x, y, w, h)
        side.synchronize()
        assert torch.equal(y, x * x)
        z = torch.full_like(x, float("nan"))
        with torch.cuda.stream(side):
            current(x, z, w, h)  # on `side`, torch's current stream there
        side.synchronize()
        assert torch.equal(z, x * x)

    def message(launch, *args):
        with pytest.raises((TypeError, kjit.Error)) as e:
            launch(*args)
        return type(e.value), str(e.value)

    y = torch.full((h, w), float("nan"), device="cuda")
    subscript = square[grid, (16, 16)]
    for args in ((torch.randn(h, w), y, w, h),                                   # on the host
                 (torch.randn(h, w, device="cuda", dtype=torch.float64), y, w, h),  # float64 for float*
                 (torch.randn(w, h, device="cuda").t(), y, w, h),               # not dense
                 (y, y, w),                                                      # an argument short
                 (y, y, w, 2 ** 40)):                                            # out of int's range
        assert message(bound, *args) == message(subscript, *args), args
    assert torch.isnan(y).all()  # no refused call launched
    with pytest.raises(TypeError):
        square.bind(grid, (16, 16), side.cuda_stream)  # stream and shared_mem by keyword only
    with pytest.raises(kjit.UsageError, match=r"block takes an int or a tuple of 1 to 3 ints"):
        square.bind(grid, (16, 16, 1, 1))


def test_bad_launch_configuration_is_a_usage_error(square):
    with pytest.raises(kjit.UsageError, match=r"grid takes an int or a tuple of 1 to 3 ints; given \(-1, 1\)"):
        square[(-1, 1), (16, 16)]
    with pytest.raises(kjit.UsageError, match=r"2 to 4 items; given 5"):
        square[1, 2, 0, None, 5]
    with pytest.raises(kjit.UsageError, match="stream= takes None, an int"):
        square[1, 1, 0, "stream"]


def test_printf_output_is_captured(capfd):
    m = kjit.load(kjit.Program("hello.cu", 'extern "C" __global__ void hello(int v) { printf("kjit says %d\\n", v); }'))
    m.hello[1, 1](4242)
    kjit.synchronize()
    assert "kjit says 4242" in capfd.readouterr().out


def test_two_threads_launching(torch, square):
    errors = []

    def work(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            for _ in range(50):
                x = torch.randn(97, 131, device="cuda", generator=g)
                y = torch.full_like(x, float("nan"))
                launch_square(square, x, y)
                torch.cuda.current_stream().synchronize()
                if not torch.equal(y, x * x):
                    errors.append("wrong result")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_profile_names_torch_matmul_and_the_kjit_kernel(torch, square, tmp_path):
    x = torch.randn(512, 512, device="cuda")
    y = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    with kjit.profile() as p:
        with kjit.range("step"):
            z = x @ x
            launch_square(square, z, y)
    if not p.active:
        pytest.skip(f"the profiler could not record here: {p.message}")
    rows = p.summary()
    names = [r["name"] for r in rows]
    assert "square_matrix_kernel" in names
    assert any(r["program"] == "" and r["calls"] >= 1 for r in rows), names  # torch's GEMM
    text = p.table(sort_by="gpu_total", limit=10)
    assert "square_matrix_kernel" in text
    trace = tmp_path / "trace.json"
    p.export_chrome_trace(trace)
    assert "square_matrix_kernel" in trace.read_text()


def test_bench_times_a_launch(torch, square):
    x = torch.randn(1024, 1024, device="cuda")
    y = torch.empty_like(x)
    ms = kjit.bench(lambda: launch_square(square, x, y), warmup=5, rep=20)
    assert 0 < ms < 100
    q = kjit.bench(lambda: launch_square(square, x, y), warmup=5, rep=20, quantiles=[0.5, 0.2, 0.8])
    assert len(q) == 3 and q[1] <= q[0] <= q[2]


class CudaStreamOnly:
    """A stream offered only through cuda.core's protocol: __cuda_stream__() -> (version, handle)."""

    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


def test_cuda_stream_protocol_taken_and_offered(torch, square):
    s = torch.cuda.Stream()
    x = torch.randn(40, 50, device="cuda")
    y = torch.full_like(x, float("nan"))
    with torch.cuda.stream(s):  # the tensors' work on s; the launch told to use s by the protocol alone
        x2 = x * 1.0
    torch.cuda.synchronize()
    square.launch((4, 3), (16, 16), (x2, y, 50, 40), stream=CudaStreamOnly(s.cuda_stream))
    s.synchronize()
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    ks = kjit.Stream(0)
    version, handle = ks.__cuda_stream__()
    assert version == 0 and handle == ks.handle and handle != 0
    y.fill_(float("nan"))
    torch.cuda.synchronize()
    square[(4, 3), (16, 16), 0, ks](x, y, 50, 40)
    ks.synchronize()
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)


def test_bench_resets_grad_to_none_before_each_call(torch, square):
    w = torch.randn(8, device="cuda", requires_grad=True)
    calls = []

    def step():
        assert w.grad is None  # reset by kjit.bench before every call, as Triton's do_bench
        w.grad = torch.ones_like(w)
        calls.append(1)

    ms = kjit.bench(step, warmup=1, rep=5, grad_to_none=[w])
    assert ms >= 0 and len(calls) > 2


class DLPackRecordingStream(DLPackOnly):
    """A DLPack producer that records the stream each __dlpack__ call names."""

    def __init__(self, tensor):
        super().__init__(tensor)
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self._t.__dlpack__(stream=stream)


def test_dlpack_is_asked_for_the_launchs_stream(torch, square):
    x = torch.randn(96, 80, device="cuda")
    y = torch.full_like(x, float("nan"))
    px, py = DLPackRecordingStream(x), DLPackRecordingStream(y)
    launch_square(square, px, py, shape=x.shape)  # no stream=: the default stream, DLPack's 1
    torch.cuda.synchronize()
    assert px.streams == [1] and py.streams == [1]
    assert torch.equal(y, x * x)
    side = kjit.Stream()
    y.fill_(float("nan"))
    torch.cuda.synchronize()
    h, w = x.shape
    square[(math.ceil(w / 16), math.ceil(h / 16)), (16, 16), 0, side](px, py, w, h)
    side.synchronize()
    assert px.streams[-1] == side.handle and py.streams[-1] == side.handle
    assert torch.equal(y, x * x)


class ArrayInterfaceOnStream:
    """A producer of __cuda_array_interface__ version 3 whose data is ready on `stream` only."""

    def __init__(self, tensor, stream):
        self._t, self._stream = tensor, stream

    @property
    def __cuda_array_interface__(self):
        cai = dict(self._t.__cuda_array_interface__)
        cai["stream"] = self._stream
        return cai


def test_array_interface_stream_is_waited_for(torch, square):
    # The producer writes x on its own stream after a long wait; the launch runs on another stream
    # and must see what the producer wrote, not the NaNs before it.
    n = 1 << 20
    x = torch.full((n // 1024, 1024), float("nan"), device="cuda")
    expected = torch.rand_like(x) + 0.5
    y = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    producer = torch.cuda.Stream()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on this stream
        x.copy_(expected)
    consumer = kjit.Stream()
    h, w = x.shape
    square[(math.ceil(w / 16), math.ceil(h / 16)), (16, 16), 0, consumer](
        ArrayInterfaceOnStream(x, producer.cuda_stream), y, w, h)
    consumer.synchronize()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected * expected, rtol=0, atol=0)


def test_one_kernel_state_for_every_module_object(torch):
    a = kjit.load_inline(name="square_identity", cuda_sources=SQUARE, functions=["square_matrix_kernel"])
    b = kjit.load(kjit.Program("square_identity.cu", SQUARE))  # the same request by another route: a new Module
    assert a is not b and b.outcome == "registry"
    ka, kb = a.square_matrix_kernel, b.kernel("square_matrix_kernel")
    assert ka._identity == kb._identity
    assert [p["source_name"] for p in kb.parameters] == ["matrix", "result", "width", "height"]
    assert a.square_matrix_kernel is ka  # an attribute once looked up


def test_load_inline_again_is_answered_from_memory(torch):
    args = dict(name="memo", cuda_sources=SQUARE, functions=["square_matrix_kernel"], extra_cuda_cflags=["-O2"])
    first = kjit.load_inline(**args)
    again = kjit.load_inline(**args)
    assert again is first  # the same Module: its kernels are attributes already
    assert again.square_matrix_kernel is first.square_matrix_kernel
    other = kjit.load_inline(**dict(args, extra_cuda_cflags=["-O3"]))
    assert other is not first
    changed = kjit.load_inline(**dict(args, cuda_sources=SQUARE + "\n// another source\n"))
    assert changed is not first and changed.compile_result.key != first.compile_result.key
    x = torch.rand(5, 6, device="cuda") + 0.5
    y = torch.full_like(x, float("nan"))
    launch_square(again.square_matrix_kernel, x, y)
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    if torch.cuda.device_count() > 1:
        with torch.cuda.device(1):
            on_1 = kjit.load_inline(**args)
        assert on_1 is not first and kjit.load_inline(**args) is first
