# GPU tests of kjit.torch.op (marker gpu): kjit kernels as torch operators, eager, under
# torch.compile (default, fullgraph=True with no graph break, reduce-overhead), in torch.cuda.graph
# capture, with autograd (gradcheck in double precision), and on the second device where there is
# one. Random inputs; outputs poisoned with NaN by the op's own `outputs` functions.
import pytest

import kjit

pytestmark = pytest.mark.gpu

SOURCE = r"""
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < height && col < width) {
    int idx = row * width + col;
    result[idx] = matrix[idx] * matrix[idx];
  }
}
__global__ void axpb(const float* x, float* y, float a, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
__global__ void add_in_place(float* data, const float* other, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += other[i];
}
__global__ void cube(const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] * x[i];
}
__global__ void cube_backward(const double* x, const double* grad, double* dx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dx[i] = 3.0 * x[i] * x[i] * grad[i];
}
"""


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="torch is not installed: kjit.torch needs it")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def ops(torch):
    mod = kjit.load_inline(name="torch_ops", cuda_sources=SOURCE,
                           functions=["square_matrix_kernel", "axpb", "add_in_place", "cube", "cube_backward"])
    nan_like = lambda t: torch.full_like(t, float("nan"))  # noqa: E731 - poisoned outputs
    o = {}
    o["square"] = kjit.torch.op(mod.square_matrix_kernel, "kjit_test::square",
                                outputs={"result": lambda matrix, width, height: nan_like(matrix)},
                                grid=lambda matrix, width, height: ((width + 15) // 16, (height + 15) // 16),
                                block=(16, 16))
    o["axpb"] = kjit.torch.op(mod.axpb, "kjit_test::axpb", outputs={"y": lambda x, a, b, n: nan_like(x)},
                              grid=lambda x, a, b, n: (n + 255) // 256, block=256)
    o["add_in_place"] = kjit.torch.op(mod.add_in_place, "kjit_test::add_in_place", mutates=["data"],
                                      grid=lambda data, other, n: (n + 127) // 128, block=128)
    cube_backward = kjit.torch.op(mod.cube_backward, "kjit_test::cube_backward",
                                  outputs={"dx": lambda x, grad, n: nan_like(x)},
                                  grid=lambda x, grad, n: (n + 63) // 64, block=64)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.n = inputs[1]

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return cube_backward(x, grad.contiguous(), ctx.n), None

    o["cube"] = kjit.torch.op(mod.cube, "kjit_test::cube", outputs={"y": lambda x, n: nan_like(x)},
                              grid=lambda x, n: (n + 63) // 64, block=64, backward=backward,
                              setup_context=setup_context)
    return o


def test_schema_is_the_kernels(torch, ops):
    assert str(ops["square"]._schema) == "kjit_test::square(Tensor matrix, SymInt width, SymInt height) -> Tensor"
    assert str(ops["add_in_place"]._schema) == \
        "kjit_test::add_in_place(Tensor(a!) data, Tensor other, SymInt n) -> ()"


def test_eager(torch, ops):
    x = torch.randn(77, 131, device="cuda")
    torch.testing.assert_close(ops["square"](x, 131, 77), x * x, rtol=0, atol=0)
    y = torch.randn(1000, device="cuda")
    torch.testing.assert_close(ops["axpb"](y, 2.5, -1.0, 1000), 2.5 * y - 1.0)
    data, other = torch.randn(300, device="cuda"), torch.randn(300, device="cuda")
    expected = data + other
    assert ops["add_in_place"](data, other, 300) is None
    torch.testing.assert_close(data, expected)


def model(ops):
    def f(x, w, h):
        y = ops["square"](x, w, h)              # kjit
        z = torch_relu(y - 1.0) * 0.5            # torch between
        t = ops["axpb"](z.reshape(-1), 3.0, 0.25, w * h)  # kjit again
        return t.reshape(h, w).sum(dim=0) + z.mean()
    return f


def torch_relu(t):
    return t.clamp_min(0)


def test_compile_fullgraph_without_a_graph_break(torch, ops):
    torch._dynamo.reset()
    f = model(ops)
    x = torch.randn(45, 67, device="cuda")
    expected = f(x, 67, 45)
    explained = torch._dynamo.explain(f)(x, 67, 45)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x, 67, 45), expected)
    x2 = torch.randn(45, 67, device="cuda")
    torch.testing.assert_close(compiled(x2, 67, 45), f(x2, 67, 45))
    torch.testing.assert_close(torch.compile(f)(x, 67, 45), expected)  # the default mode


def test_compile_reduce_overhead(torch, ops):
    torch._dynamo.reset()
    f = model(ops)
    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for seed in range(4):
        x = torch.randn(33, 64, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        torch.testing.assert_close(compiled(x, 64, 33).clone(), f(x, 64, 33))


def test_cuda_graph_capture_and_replay(torch, ops):
    x = torch.randn(50, 70, device="cuda")
    ops["square"](x, 70, 50)  # warm-up outside the capture, as torch asks
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ops["square"](x, 70, 50)
        z = ops["axpb"](y.reshape(-1), -2.0, 1.0, 3500)
    for _ in range(3):
        x.copy_(torch.randn(50, 70, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x * x, rtol=0, atol=0)
        torch.testing.assert_close(z, -2.0 * (x * x).reshape(-1) + 1.0)


def test_gradcheck_through_a_kjit_backward(torch, ops):
    x = torch.randn(37, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ops["cube"](t, 37), (x,))
    y = ops["cube"](x, 37)
    y.sum().backward()
    torch.testing.assert_close(x.grad, 3 * x.detach() ** 2)


def test_the_op_on_the_second_device(torch, ops):
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two CUDA devices; torch sees {torch.cuda.device_count()}")
    torch.cuda.set_device(0)
    x = torch.randn(29, 31, device="cuda:1")
    y = ops["square"](x, 31, 29)
    assert y.device == x.device and torch.cuda.current_device() == 0
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    compiled = torch.compile(model(ops), fullgraph=True)
    torch.testing.assert_close(compiled(x, 31, 29), model(ops)(x, 31, 29))
    assert torch.cuda.current_device() == 0


def test_registration_errors_come_at_registration(torch, ops):
    mod = kjit.load_inline(name="torch_ops", cuda_sources=SOURCE, functions=["square_matrix_kernel"])
    with pytest.raises(kjit.UsageError, match="already"):
        kjit.torch.op(mod.square_matrix_kernel, "kjit_test::square", grid=1, block=1,
                      outputs={"result": lambda matrix, width, height: matrix})
    with pytest.raises(kjit.UsageError, match="takes 2 argument"):
        kjit.torch.op(mod.square_matrix_kernel, "kjit_test::square2", grid=1, block=1,
                      outputs={"result": lambda matrix, width: matrix})
    with pytest.raises(kjit.UsageError, match="written by the kernel"):
        kjit.torch.op(mod.square_matrix_kernel, "kjit_test::square3", grid=1, block=1)
