# GPU tests (marker gpu): every device array checked against the kernel's parameter before a
# launch: its element type (from the mangled name, or an extern "C" kernel's declaration), a dense
# layout and its device; with torch tensors, CuPy arrays, a __cuda_array_interface__-only and a
# DLPack-only object, through k[grid, block], k.launch() and kjit.torch.op (eager and under
# torch.compile(fullgraph=True)); and the two documented ways out (kjit.raw, strided=True) giving
# the right answer. Random inputs, NaN-poisoned outputs.
import math

import pytest

import kjit

pytestmark = pytest.mark.gpu

SOURCE = r"""
#include <cuda_fp16.h>
typedef float real_t;
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) result[row * width + col] = matrix[row * width + col] * matrix[row * width + col];
}
extern "C" __global__ void c_square(const real_t* matrix, real_t* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) result[row * width + col] = matrix[row * width + col] * matrix[row * width + col];
}
// Takes its input's strides itself (in elements): a transposed or sliced tensor is fine here.
__global__ void strided_square(const float* x, float* y, int rows, int cols, long long s0, long long s1) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) { float v = x[r * s0 + c * s1]; y[r * cols + c] = v * v; }
}
__global__ void conj_scale(const float2* z, float2* out, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float2(a * z[i].x, -a * z[i].y);
}
__global__ void half_double(const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hadd(x[i], x[i]);
}
"""

NAMES = ["square_matrix_kernel", "c_square", "strided_square", "conj_scale", "half_double"]


class _DLPack:
    """A producer that offers DLPack and nothing else (as JAX arrays do)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def mod():
    return kjit.load_inline(name="tensor_checks", cuda_sources=SOURCE, functions=NAMES)


def grid_of(h, w):
    return (math.ceil(w / 16), math.ceil(h / 16)), (16, 16)


def test_integers_of_one_width_fit_either_signedness(torch):
    m = kjit.load_inline(name="signedness", functions=["count"], cuda_sources=r"""
__global__ void count(unsigned int* hits, const long long* values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && values[i] > 0) atomicAdd(hits, 1u);
}""")
    values = torch.randint(-1000, 1000, (500,), device="cuda", dtype=torch.int64)
    hits = torch.zeros(1, dtype=torch.int32, device="cuda")  # torch's usual stand-in for unsigned int
    m.count[4, 128](hits, values, 500)
    assert hits.item() == int((values > 0).sum())
    unsigned = values.view(torch.uint64) if hasattr(torch, "uint64") else None
    if unsigned is not None:
        m.count[4, 128](hits, unsigned, 500)  # uint64 for const long long*: the same width
    with pytest.raises(kjit.ArgumentError, match="int16 elements"):
        m.count[4, 128](hits.to(torch.int16), values, 500)


def test_the_kernels_element_types(mod):
    assert [p["element"] for p in mod.square_matrix_kernel.parameters[:2]] == ["float32", "float32"]
    assert [p["element"] for p in mod.c_square.parameters[:2]] == ["float32", "float32"]  # extern "C": a typedef
    assert mod.conj_scale.parameters[0]["element"] == "float32x2"
    assert mod.half_double.parameters[0]["element"] == "float16"


@pytest.mark.parametrize("kernel", ["square_matrix_kernel", "c_square"])
@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "int32", "uint8", "complex64", "int64"])
def test_a_wrong_dtype_is_refused_through_every_launch(torch, mod, kernel, dtype):
    k = getattr(mod, kernel)
    x = (torch.rand(5, 7, device="cuda") * 10 + 1).to(getattr(torch, dtype))
    y = torch.full((5, 7), float("nan"), device="cuda")
    match = rf"argument 0 does not fit parameter #0 .*matrix.*given \w+ elements \(torch.{dtype} tensor\).*" \
            r"takes float32 elements.*kjit.raw"
    g, b = grid_of(5, 7)
    with pytest.raises(kjit.ArgumentError, match=match):
        k[g, b](x, y, 7, 5)
    with pytest.raises(kjit.ArgumentError, match=match):
        k.launch(g, b, (x, y, 7, 5))
    torch.cuda.synchronize()
    assert torch.isnan(y).all()  # nothing ran


def test_wrong_dtypes_from_cupy_and_the_protocols(torch, mod):
    cp = pytest.importorskip("cupy")
    k = mod.square_matrix_kernel
    g, b = grid_of(5, 7)
    y = cp.full((5, 7), cp.nan, dtype=cp.float32)
    for dtype in (cp.float64, cp.float16, cp.int32):
        x = cp.random.rand(5, 7).astype(dtype)
        with pytest.raises(kjit.ArgumentError, match=r"argument 0 .*cupy array of \w+.*takes float32 elements"):
            k[g, b](x, y, 7, 5)

    class ArrayInterfaceOnly:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    x64 = torch.rand(5, 7, device="cuda", dtype=torch.float64)
    with pytest.raises(kjit.ArgumentError, match=r"typestr '<f8'.*takes float32 elements"):
        k[g, b](ArrayInterfaceOnly(cp.asarray(x64)), y, 7, 5)
    with pytest.raises(kjit.ArgumentError, match=r"DLPack dtype \(code 2, 64 bits.*takes float32 elements"):
        k[g, b](_DLPack(x64), y, 7, 5)
    assert bool(cp.isnan(y).all())


def test_transposed_and_sliced_are_refused_naming_shape_and_strides(torch, mod):
    k = mod.square_matrix_kernel
    y = torch.full((8, 6), float("nan"), device="cuda")
    g, b = grid_of(8, 6)
    t = torch.rand(6, 8, device="cuda").t()  # (8, 6), strides (1, 8)
    with pytest.raises(kjit.ArgumentError, match=r"non-contiguous torch.Tensor: shape \(8, 6\), strides \(1, 8\).*"
                                                 r"\.contiguous\(\)"):
        k[g, b](t, y, 6, 8)
    s = torch.rand(8, 12, device="cuda")[:, ::2]
    with pytest.raises(kjit.ArgumentError, match=r"strides \(12, 2\)"):
        k[g, b](s, y, 6, 8)
    cp = pytest.importorskip("cupy")
    with pytest.raises(kjit.ArgumentError, match=r"non-contiguous cupy.*strides"):
        k[g, b](cp.random.rand(6, 8, dtype=cp.float32).T, cp.asarray(y), 6, 8)
    with pytest.raises(kjit.ArgumentError, match=r"non-contiguous .*DLPack"):
        k.launch(g, b, (_DLPack(t), y, 6, 8))
    torch.cuda.synchronize()
    assert torch.isnan(y).all()


def test_a_host_tensor_is_refused(torch, mod):
    y = torch.full((4, 4), float("nan"), device="cuda")
    with pytest.raises(kjit.ArgumentError, match=r"argument 0 .*matrix.*on the host \(cpu\)"):
        mod.square_matrix_kernel[grid_of(4, 4)](torch.rand(4, 4), y, 4, 4)


def test_a_tensor_on_the_other_gpu_is_refused(torch, mod):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    x = torch.rand(4, 4, device="cuda:0")
    y = torch.full((4, 4), float("nan"), device="cuda:1")
    with pytest.raises(kjit.ArgumentError, match=r"argument 1 .*result.*cuda:1.*cuda:0"):
        mod.square_matrix_kernel[grid_of(4, 4)](x, y, 4, 4)
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        y1 = cp.full((4, 4), cp.nan, dtype=cp.float32)
    with pytest.raises(kjit.ArgumentError, match=r"argument 1 .*cuda:1.*cuda:0"):
        mod.square_matrix_kernel[grid_of(4, 4)](cp.asarray(x), y1, 4, 4)


def test_kjit_raw_reinterprets_deliberately(torch, mod):
    x = torch.rand(9, 11, device="cuda") + 0.5
    y = torch.full_like(x, float("nan"))
    as_bytes = x.view(torch.uint8)  # a uint8 buffer holding float32s
    g, b = grid_of(9, 11)
    with pytest.raises(kjit.ArgumentError, match="uint8 elements"):
        mod.square_matrix_kernel[g, b](as_bytes, y, 11, 9)
    mod.square_matrix_kernel[g, b](kjit.raw(as_bytes), y, 11, 9)
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    cp = pytest.importorskip("cupy")
    z = cp.full((9, 11), cp.nan, dtype=cp.float32)
    mod.c_square[g, b](kjit.raw(cp.asarray(as_bytes)), z, 11, 9)
    cp.cuda.get_current_stream().synchronize()
    assert bool(cp.array_equal(z, cp.asarray(x * x)))
    with pytest.raises(kjit.ArgumentError, match=r"on the host"):
        mod.square_matrix_kernel[g, b](kjit.raw(x.cpu()), y, 11, 9)  # the device is still checked


def test_strided_true_for_a_kernel_that_takes_strides(torch, mod):
    x = torch.rand(13, 10, device="cuda") + 0.5
    t = x.t()  # (10, 13), strides (1, 10)
    y = torch.full((10, 13), float("nan"), device="cuda")
    g, b = grid_of(10, 13)
    with pytest.raises(kjit.ArgumentError, match="strided=True"):
        mod.strided_square[g, b](t, y, 10, 13, t.stride(0), t.stride(1))
    mod.strided_square.launch(g, b, (t, y, 10, 13, t.stride(0), t.stride(1)), strided=True)
    torch.testing.assert_close(y, t * t, rtol=0, atol=0)
    y2 = torch.full_like(y, float("nan"))
    mod.strided_square.launcher(g, b, strided=True)(t, y2, 10, 13, t.stride(0), t.stride(1))
    torch.testing.assert_close(y2, t * t, rtol=0, atol=0)


def test_float2_takes_complex64_or_a_last_dimension_of_2(torch, mod):
    n = 300
    z = torch.randn(n, dtype=torch.complex64, device="cuda")
    out = torch.full_like(z, complex(float("nan"), float("nan")))
    mod.conj_scale[(n + 127) // 128, 128](z, out, 2.0, n)
    torch.testing.assert_close(out, 2.0 * z.conj(), rtol=0, atol=0)
    pairs = torch.view_as_real(z).contiguous()  # float32 (n, 2)
    out2 = torch.full_like(pairs, float("nan"))
    mod.conj_scale[(n + 127) // 128, 128](pairs, out2, 2.0, n)
    torch.testing.assert_close(torch.view_as_complex(out2), 2.0 * z.conj(), rtol=0, atol=0)
    with pytest.raises(kjit.ArgumentError, match=r"float32x2 elements \(or float32 whose last dimension is 2\)"):
        mod.conj_scale[1, 128](torch.rand(n, 3, device="cuda"), out2, 2.0, n)
    h = torch.randn(n, device="cuda").half()
    hy = torch.full_like(h, float("nan"))
    mod.half_double[(n + 127) // 128, 128](h, hy, n)
    torch.testing.assert_close(hy, h + h, rtol=0, atol=0)
    with pytest.raises(kjit.ArgumentError, match=r"bfloat16 elements.*takes float16"):
        mod.half_double[1, 128](h.bfloat16(), hy, n)


@pytest.fixture(scope="module")
def ops(torch, mod):
    nan_like = lambda t: torch.full_like(t, float("nan"), dtype=torch.float32)  # noqa: E731
    square = kjit.torch.op(mod.square_matrix_kernel, "kjit_checks::square",
                           outputs={"result": lambda matrix, width, height: nan_like(matrix)},
                           grid=lambda matrix, width, height: ((width + 15) // 16, (height + 15) // 16),
                           block=(16, 16))
    strided = kjit.torch.op(mod.strided_square, "kjit_checks::strided_square", strided=True,
                            outputs={"y": lambda x, rows, cols, s0, s1: torch.full((rows, cols), float("nan"),
                                                                                  device=x.device)},
                            grid=lambda x, rows, cols, s0, s1: ((cols + 15) // 16, (rows + 15) // 16), block=(16, 16))
    return {"square": square, "strided": strided}


def test_the_op_refuses_dtype_layout_and_host(torch, ops):
    square = ops["square"]
    x = torch.rand(6, 5, device="cuda") + 0.5
    torch.testing.assert_close(square(x, 5, 6), x * x, rtol=0, atol=0)
    with pytest.raises(kjit.ArgumentError, match=r"matrix.*float64 elements \(torch.float64 tensor\).*float32"):
        square(x.double(), 5, 6)
    with pytest.raises(kjit.ArgumentError, match=r"non-contiguous torch.Tensor: shape \(5, 6\), strides \(1, 5\)"):
        square(x.t(), 6, 5)
    with pytest.raises(kjit.ArgumentError, match=r"parameter #0 .*matrix.*a torch.Tensor on the host \(cpu\)"):
        square(x.cpu(), 5, 6)


def test_the_op_refuses_under_torch_compile(torch, ops):
    square = ops["square"]
    f = torch.compile(lambda x: square(x, 5, 6) * 2, fullgraph=True)
    x = torch.rand(6, 5, device="cuda") + 0.5
    torch.testing.assert_close(f(x), 2 * x * x, rtol=0, atol=0)
    g = torch.compile(lambda x: square(x, 5, 6) * 2, fullgraph=True)
    with pytest.raises(Exception, match=r"float64 elements"):
        g(x.double())
    h = torch.compile(lambda x: square(x.t(), 6, 5) * 2, fullgraph=True)
    with pytest.raises(Exception, match=r"non-contiguous"):
        h(x)


def test_the_strided_op_gives_the_right_answer(torch, ops):
    x = torch.rand(7, 9, device="cuda") + 0.5
    t = x.t()
    y = ops["strided"](t, 9, 7, t.stride(0), t.stride(1))
    torch.testing.assert_close(y, t * t, rtol=0, atol=0)
    f = torch.compile(lambda a: ops["strided"](a.t(), 9, 7, 1, 9), fullgraph=True)
    torch.testing.assert_close(f(x), t * t, rtol=0, atol=0)


_PRECISION = r"""
#ifdef USE_DOUBLE
typedef double real_t;
#else
typedef float real_t;
#endif
#define SCALE(v) ((real_t)3 * (v))
extern "C" __global__ void triple(const real_t* x, real_t* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE(x[i]);
}
"""


@pytest.mark.parametrize("define, dtype, wrong", [(None, "float32", "float64"), ("USE_DOUBLE", "float64", "float32")])
def test_an_extern_c_precision_switch_takes_the_tensor_it_compiled_for(torch, define, dtype, wrong):
    # The types as NVRTC compiled them (issue #55): float without -D, double with it; right numbers.
    m = kjit.load_inline(name=f"precision_{dtype}", cuda_sources=_PRECISION, functions=["triple"],
                         extra_cuda_cflags=[f"-D{define}"] if define else [])
    assert m.triple.parameters[0]["element"] == dtype
    n = 1000
    x = torch.rand(n, device="cuda", dtype=getattr(torch, dtype)) * 10 - 5
    y = torch.full((n,), float("nan"), device="cuda", dtype=getattr(torch, dtype))
    m.triple[(n + 127) // 128, 128](x, y, n)
    torch.cuda.synchronize()
    assert torch.equal(y, 3 * x)
    with pytest.raises(kjit.ArgumentError, match=rf"takes {dtype} elements"):
        m.triple[(n + 127) // 128, 128](x.to(getattr(torch, wrong)), y, n)


def test_fp8_unsigned_and_bool_tensors_fit_their_kernels(torch):
    # Rows of the one dtype table (kjit.element_types in C++): fp8, torch's uint32, bool.
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "uint32"):
        pytest.skip("this torch has no float8_e4m3fn or uint32")
    m = kjit.load_inline(name="dtype_rows", functions=["widen"], cuda_sources=r"""
#include <cuda_fp8.h>
extern "C" __global__ void widen(const __nv_fp8_e4m3* a, const __nv_fp8_e5m2* b, const unsigned* u,
                                 const bool* keep, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = keep[i] ? float(a[i]) + float(b[i]) + float(u[i]) : -1.f;
}""")
    assert [p["element"] for p in m.widen.parameters[:4]] == ["float8_e4m3", "float8_e5m2", "uint32", "bool"]
    n = 256
    a = (torch.rand(n, device="cuda") * 4).to(torch.float8_e4m3fn)
    b = (torch.rand(n, device="cuda") * 4).to(torch.float8_e5m2)
    u = torch.randint(0, 100, (n,), device="cuda", dtype=torch.int64).to(torch.uint32)
    keep = torch.rand(n, device="cuda") > 0.3
    out = torch.full((n,), float("nan"), device="cuda")
    m.widen[2, 128](a, b, u, keep, out, n)
    torch.cuda.synchronize()
    expected = torch.where(keep, a.float() + b.float() + u.to(torch.int64).float(), torch.full_like(out, -1.0))
    assert torch.equal(out, expected)
    with pytest.raises(kjit.ArgumentError, match="takes float8_e4m3 elements"):
        m.widen[2, 128](b, b, u, keep, out, n)
