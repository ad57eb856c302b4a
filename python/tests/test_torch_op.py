# CPU tests of kjit.torch: the op schema derived from a kernel's parameter list (PTX, mangled name,
# source names), registration errors before anything is registered, and, where torch is
# installed, the registration itself and the fake implementation under torch's FakeTensorMode.
import sys

import pytest

import kjit
import kjit.torch as kt

SOURCE = r"""
struct Pair { float a; int b; };
// the lecture's kernel
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {}
__global__ void widths(const double* x, double* y, signed char a, unsigned char b, short c, unsigned short d,
                       int e, unsigned f, long long g, unsigned long long h, float i, double j, bool k) {}
__global__ void two_out(const float* __restrict__ in, float* sum, float* diff, long long n) {}
__global__ void in_place(float* data, const float* other, int n) {}
__global__ void by_value(Pair p, float* out) {}
extern "C" __global__ void plain(float* out, const float* in, unsigned n) {}
__global__ void /* a comment */ commented(const float* a /* the input */, float* b, // the output
                                          int n = 4) {}
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    rt = kjit.Runtime(cache_dir=str(tmp_path_factory.mktemp("cache")))
    return rt.compile(kjit.Program("ops.cu", SOURCE), arch="sm_90")


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """A result that knows no source (as kjit.link's): its signatures have no names."""
    rt = kjit.Runtime(cache_dir=str(tmp_path_factory.mktemp("cache")))
    r = rt.compile(kjit.Program("ops.cu", SOURCE), arch="sm_90")
    del r._source
    return r


def sig(result, name, named=True, bare=None):
    if not named:
        return bare.signature(name)
    s = result.signature(name)  # kjit.compile's result reads the names from its program's source
    assert s.read_declaration(SOURCE)
    return s


def empty_like(*args):
    return None


def test_square_schema_from_ptx_and_source(result):
    s = sig(result, "square_matrix_kernel")
    assert [p["source_name"] for p in s.parameters] == ["matrix", "result", "width", "height"]
    assert [p["read_only"] for p in s.parameters] == [True, False, False, False]
    assert kt.schema(s, "mylib::square", outputs={"result": lambda matrix, width, height: None}) == \
        "square(Tensor matrix, SymInt width, SymInt height) -> Tensor"


def test_every_scalar_width(result):
    s = sig(result, "widths")
    assert kt.schema(s, "t::widths", outputs={"y": empty_like}) == (
        "widths(Tensor x, SymInt a, SymInt b, SymInt c, SymInt d, SymInt e, SymInt f, SymInt g, SymInt h, float i, float j, bool k) -> Tensor")


def test_two_outputs_in_order_and_restrict(result):  # and "in", a Python keyword, as in_
    s = sig(result, "two_out")
    assert s.parameters[0]["read_only"]
    assert kt.schema(s, "t::two", outputs={"sum": empty_like, "diff": empty_like}) == \
        "two(Tensor in_, SymInt n) -> (Tensor, Tensor)"


def test_outputs_named_by_the_caller_take_the_writable_pointers_in_order(bare):
    s = sig(None, "two_out", named=False, bare=bare)
    assert all(p["source_name"] == "" for p in s.parameters)
    assert kt.schema(s, "t::two", outputs={"s": lambda x, n: None, "d": lambda x, n: None}) == \
        "two(Tensor x, SymInt n) -> (Tensor, Tensor)"
    assert kt.schema(s, "t::two", outputs={"s": empty_like, "d": empty_like}) == \
        "two(Tensor arg0, SymInt arg3) -> (Tensor, Tensor)"


def test_mutated_input(result):
    s = sig(result, "in_place")
    assert kt.schema(s, "t::in_place", mutates=["data"]) == "in_place(Tensor(a!) data, Tensor other, SymInt n) -> ()"
    assert kt.schema(s, "t::in_place", mutates=[0]) == "in_place(Tensor(a!) data, Tensor other, SymInt n) -> ()"


def test_extern_c_pointers_are_typed_by_the_compiler(result, bare):
    unread = sig(None, "plain", named=False, bare=bare)  # no source: NVRTC's type query says float*, const float*, unsigned
    assert [p["kind"] for p in unread.parameters] == ["pointer", "pointer", "unsigned integer"]
    assert all(p["source_name"] == "" for p in unread.parameters)
    s = sig(result, "plain")  # the declaration adds the names
    assert [p["kind"] for p in s.parameters] == ["pointer", "pointer", "unsigned integer"]
    assert [p["element"] for p in s.parameters[:2]] == ["float32", "float32"]
    assert [p["read_only"] for p in s.parameters] == [False, True, False]
    assert kt.schema(s, "t::plain", outputs={0: empty_like}) == "plain(Tensor in_, SymInt n) -> Tensor"
    assert kt.schema(s, "t::plain", outputs={"out": empty_like}) == "plain(Tensor in_, SymInt n) -> Tensor"
    assert kt.schema(s, "t::plain", mutates=[0]) == "plain(Tensor(a!) out, Tensor in_, SymInt n) -> ()"
    with pytest.raises(kjit.UsageError, match="out.*written by the kernel"):
        kt.schema(s, "t::plain")


def test_schema_without_a_qualified_name(result):  # as docs/python.md shows it
    s = sig(result, "square_matrix_kernel")
    assert kt.schema(s, outputs={"result": empty_like}) == "square_matrix_kernel(Tensor matrix, SymInt width, " \
        "SymInt height) -> Tensor"


def test_an_extern_c_kernel_s_types_are_the_compiler_s_without_a_gpu():
    # A macro and a precision switch: the types as NVRTC compiled them, with no source read.
    src = "#ifdef USE_DOUBLE\ntypedef double real_t;\n#else\ntypedef float real_t;\n#endif\n" \
          "#define REAL real_t\nextern \"C\" __global__ void f(const REAL* x, REAL* y, int n) {}"
    s = kjit.compile(kjit.Program("m.cu", src), arch="sm_90").signature("f")
    assert [p["element"] for p in s.parameters[:2]] == ["float32", "float32"]
    assert s.parameters[0]["read_only"] and not s.parameters[1]["read_only"]
    d = kjit.compile(kjit.Program("m.cu", src), arch="sm_90", defines=["USE_DOUBLE"]).signature("f")
    assert [p["element"] for p in d.parameters[:2]] == ["float64", "float64"]


def test_signature_names_the_unchecked():
    # A kernel made by a function-like macro: NVRTC was not asked, and the signature says why.
    src = "#define KERNEL(name) extern \"C\" __global__ void name(float* x, int n) {}\nKERNEL(f)\n"
    s = kjit.compile(kjit.Program("m.cu", src), arch="sm_90").signature("f")
    assert s.parameters[0]["element"] == "unchecked"
    assert "NVRTC was not asked its type" in str(s)


def test_comments_and_default_arguments_in_the_declaration(result):
    s = sig(result, "commented")
    assert [p["source_name"] for p in s.parameters] == ["a", "b", "n"]


def test_name_parameters_needs_the_declaration(bare):
    s = bare.signature("square_matrix_kernel")
    assert not s.read_declaration("__global__ void other(int a) {}")
    assert not s.read_declaration("void square_matrix_kernel(const float* m, float* r, int w, int h);")  # not __global__
    assert not s.read_declaration("__global__ void square_matrix_kernel(int only) {}")  # other arity
    assert all(p["source_name"] == "" for p in s.parameters)


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "result.*written by the kernel"),
    (dict(outputs={"result": empty_like, "extra": empty_like}), "outputs has 2 entries"),
    (dict(outputs={"matrix": empty_like}), "const"),
    (dict(outputs={"result": empty_like}, mutates=["width"]), "a scalar"),
    (dict(outputs={"result": empty_like}, mutates=["nope"]), "no parameter"),
    (dict(outputs={"result": lambda matrix, width: None}), "takes 2 argument"),
    (dict(outputs={"result": empty_like}, grid=lambda a, b, c, d: 1), "grid takes 4 argument"),
    (dict(outputs={"result": empty_like}, mutates=["result"]), "both an output and mutated"),
])
def test_registration_errors(result, kwargs, message):
    s = sig(result, "square_matrix_kernel")
    with pytest.raises(kjit.UsageError, match=message):
        kt.schema(s, "mylib::square", **kwargs)


@pytest.mark.parametrize("name", ["square", "a::b::c", "my lib::square", "mylib::", "mylib::def"])
def test_bad_names(result, name):
    with pytest.raises(kjit.UsageError, match="namespace::name|not an identifier"):
        kt.schema(sig(result, "square_matrix_kernel"), name, outputs={"result": empty_like})


def test_structs_are_refused(result):
    with pytest.raises(kjit.UsageError, match="passed by value as 8 bytes"):
        kt.schema(sig(result, "by_value"), "t::by_value", outputs={"out": empty_like})


def test_kjit_torch_imports_no_torch():
    import subprocess
    code = "import sys, kjit, kjit.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed: the registration and fake tensor tests "
                                               "need it (the schema tests above ran without it)")


class _FakeKernel:
    """What op() reads of a kernel, for registering without a GPU: its parameters and k[grid, block]."""

    def __init__(self, signature):
        self.parameters = signature.parameters
        self.name = signature.kernel

    def __getitem__(self, config):
        raise AssertionError("the fake implementation never launches")


def test_registration_and_fake_shapes(result):
    torch = _torch()
    from torch._subclasses.fake_tensor import FakeTensorMode
    k = _FakeKernel(sig(result, "two_out"))
    op = kt.op(k, "kjit_cpu_test::two_out", grid=lambda x, n: (n + 255) // 256, block=256,
               outputs={"sum": lambda x, n: torch.empty_like(x), "diff": lambda x, n: x.new_empty(x.shape[0] * 2)})
    assert str(op._schema) == "kjit_cpu_test::two_out(Tensor in_, SymInt n) -> (Tensor, Tensor)"
    with FakeTensorMode():
        x = torch.empty(5, 3, device="cuda" if torch.cuda.is_available() else "cpu")
        s, d = torch.ops.kjit_cpu_test.two_out(x, 15)
        assert s.shape == (5, 3) and d.shape == (10,)
        assert s.dtype == x.dtype
    with pytest.raises(kjit.UsageError, match="already"):
        kt.op(_FakeKernel(sig(result, "two_out")), "kjit_cpu_test::two_out", grid=1, block=1,
              outputs={"sum": lambda x, n: x, "diff": lambda x, n: x})
    with pytest.raises(kjit.UsageError, match="registered already as kjit_cpu_test::two_out"):
        kt.op(k, "kjit_cpu_test::two_out_again", grid=1, block=1,
              outputs={"sum": lambda x, n: x, "diff": lambda x, n: x})


def test_a_name_torch_has_is_refused(result):
    _torch()
    with pytest.raises(kjit.UsageError, match="torch has an operator of this name"):
        kt.op(_FakeKernel(sig(result, "in_place")), "aten::add", grid=1, block=1, mutates=["data"])


def test_a_compile_result_names_its_kernels_parameters_from_its_source(tmp_path):  # #57 item 16
    # kjit.compile keeps the program's source: no GPU and no read_declaration call for the names.
    rt = kjit.Runtime(cache_dir=str(tmp_path / "cache"))
    r = rt.compile(kjit.Program("ops.cu", SOURCE), arch="sm_90")
    assert [p["source_name"] for p in r.signature("plain").parameters] == ["out", "in", "n"]
    assert [p["source_name"] for p in r.signature("square_matrix_kernel").parameters] == \
        ["matrix", "result", "width", "height"]
    # A cache hit in a new Runtime, and load_inline(arch=), name them too.
    again = kjit.Runtime(cache_dir=str(tmp_path / "cache")).compile(kjit.Program("ops.cu", SOURCE), arch="sm_90")
    assert again.outcome == "hit"
    assert [p["source_name"] for p in again.signature("two_out").parameters] == ["in", "sum", "diff", "n"]
    inline = kjit.load_inline("ops", cuda_sources=SOURCE, functions=["plain"], arch="sm_90",
                              build_directory=str(tmp_path / "cache"))
    assert [p["source_name"] for p in inline.signature("plain").parameters] == ["out", "in", "n"]
    # Named, the op's schema takes them: outputs by name, inputs named as in the source.
    assert kt.schema(inline.signature("plain"), "t::plain", outputs={"out": empty_like}) == \
        "plain(Tensor in_, SymInt n) -> Tensor"


def test_an_unknown_pointer_is_refused_as_a_written_one():  # #57 item 16
    # A kernel whose types the compiler was not asked (made by a macro): its 64-bit parameter may be a
    # pointer it writes, so the op refuses to take it as a read-only input without a word, as it
    # refuses a non-const pointer.
    src = "#define KERNEL(name) extern \"C\" __global__ void name(float* x, int n) {}\nKERNEL(f)\n"
    s = kjit.compile(kjit.Program("m.cu", src), arch="sm_90").signature("f")
    assert s.parameters[0]["kind"] == "pointer or 64-bit integer"
    with pytest.raises(kjit.UsageError, match="may be a pointer the kernel writes: its type is unknown"):
        kt.schema(s, "t::f")
    # Declared, it is taken: an output by position (no names), or a mutated input.
    assert kt.schema(s, "t::f", outputs={"y": lambda n: None}) == "f(SymInt n) -> Tensor"
    assert kt.schema(s, "t::f", mutates=[0]) == "f(Tensor(a!) arg0, SymInt arg1) -> ()"


@pytest.mark.parametrize("key, meant", [("reslut", "result"), ("results", "result"), ("out", None)])
def test_an_output_name_the_kernel_lacks_is_refused(result, key, meant):  # #57 item 14
    # A typo in outputs= is refused as one in mutates= is, never taken by position.
    s = sig(result, "square_matrix_kernel")
    with pytest.raises(kjit.UsageError) as e:
        kt.schema(s, "mylib::square", outputs={key: empty_like})
    assert f"the output {key!r} is no parameter of the kernel" in str(e.value)
    assert "outputs= names the pointers it writes: result" in str(e.value)
    assert (f"did you mean {meant!r}" in str(e.value)) == (meant is not None)


def test_schema_doc_says_symint():  # #57 item 15
    assert "SymInt width" in kt.schema.__doc__ and "int width" not in kt.schema.__doc__.replace("SymInt width", "")
