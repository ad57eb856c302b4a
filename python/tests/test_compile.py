# CPU tests: compile-only features work without a GPU or driver.
import os
import subprocess
import sys
import textwrap

import pytest

import kjit
from conftest import SQUARE


SCALE = r"""
#include "coeff.cuh"
template <class T> __global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * COEFF * N;
}
"""


def test_import_does_not_import_torch_or_cupy():
    code = "import sys, kjit; print(sorted(m for m in ('torch', 'cupy', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_and_compile_without_a_device():
    # A process that sees no GPU (no driver here; CUDA_VISIBLE_DEVICES="" on a GPU machine) still
    # imports kjit and compiles; a load says why it cannot.
    code = textwrap.dedent("""
        import kjit
        assert kjit.device_count() == 0
        r = kjit.compile(kjit.Program("s.cu", 'extern "C" __global__ void k(float* p) { p[0] = 1; }'), arch="sm_90")
        assert r.ptx and r.cubin
        try:
            kjit.load(kjit.Program("s.cu", 'extern "C" __global__ void k() {}'))
        except kjit.Error as e:
            print(type(e).__name__, e)
    """)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    kind = out.stdout.split()[0]
    assert kind in ("DriverNotFoundError", "CudaError", "UsageError"), out.stdout
    if not kjit.driver_available():
        assert kind == "DriverNotFoundError" and "libcuda.so.1" in out.stdout


def test_compile_for_sm90_gives_ptx_and_cubin(runtime):
    r = runtime.compile(kjit.Program("square.cu", SQUARE), arch="sm_90")
    assert ".entry _Z20square_matrix_kernelPKfPfii" in r.ptx
    assert isinstance(r.cubin, bytes) and r.cubin[:4] == b"\x7fELF"
    assert r.arch == "sm_90" and len(r.key) == 32
    assert r.outcome == "compiled"
    p = runtime.compile(kjit.Program("square.cu", SQUARE), arch="compute_90")
    assert p.ptx and p.cubin == b""


def test_templates_by_name_expression_and_headers(runtime):
    prog = kjit.Program("scale.cu", SCALE).header("coeff.cuh", "#define COEFF 2.0f\n").instantiate("scale<float>")
    prog.instantiate("scale<double>")
    r = runtime.compile(prog, arch="sm_90", defines={"N": 4})
    assert r.lowered_names == {"scale<float>": "_Z5scaleIfEvPT_S0_i", "scale<double>": "_Z5scaleIdEvPT_S0_i"}
    assert str(r.signature("scale<double>")) == "scale<double>(double* [.u64], double [.f64], int [.u32])"


def test_two_spellings_of_options_give_one_key(runtime):
    prog = kjit.Program("square.cu", SQUARE)
    a = runtime.compile(prog, arch="sm_90", fast_math=True, defines={"N": 4})
    b = runtime.compile(prog, arch="90", flags=["-use_fast_math", "-DN=4"])
    assert a.key == b.key
    assert b.outcome == "hit"
    c = runtime.compile(prog, arch="sm_90", defines={"N": 5})
    assert c.key != a.key


def test_outcome_compiled_then_hit_in_a_second_process(cache_dir):
    code = textwrap.dedent(f"""
        import kjit
        rt = kjit.Runtime(cache_dir={str(cache_dir)!r})
        r = rt.compile(kjit.Program("square.cu", {SQUARE!r}), arch="sm_90")
        print(r.outcome, r.key)
    """)
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert first[0] == "compiled" and second[0] == "hit"
    assert first[1] == second[1]


def test_error_hierarchy_with_log(runtime):
    with pytest.raises(kjit.CompileError) as e:
        runtime.compile(kjit.Program("bad.cu", "__global__ void k() { undefined_name; }"), arch="sm_90")
    assert isinstance(e.value, kjit.Error) and isinstance(e.value, RuntimeError)
    assert 'identifier "undefined_name" is undefined' in e.value.log
    assert "undefined_name" in str(e.value) and e.value.program == "bad.cu"
    with pytest.raises(kjit.UsageError) as u:
        runtime.compile(kjit.Program("s.cu", SQUARE), arch="sm_7")
    assert isinstance(u.value, ValueError) and "sm_7" in str(u.value)
    with pytest.raises(kjit.UsageError):
        runtime.compile(kjit.Program("s.cu", SQUARE), arch="sm_90", flags=["--bogus-flag"])
    with pytest.raises(kjit.UsageError, match="unknown option"):
        kjit.Runtime(cache_dirr="/tmp")
    assert issubclass(kjit.ArgumentError, kjit.UsageError) and issubclass(kjit.ArgumentError, TypeError)
    for cls in (kjit.CudaError, kjit.DriverNotFoundError, kjit.NvrtcError, kjit.LinkError, kjit.UnavailableError,
                kjit.IoError):
        assert issubclass(cls, kjit.Error)
    with pytest.raises(kjit.IoError):
        kjit.read_program("/nonexistent/kernel.cu")


def test_load_inline_refuses_cpp_sources_with_the_replacement():
    with pytest.raises(kjit.UsageError) as e:
        kjit.load_inline(name="square", cpp_sources="torch::Tensor square(torch::Tensor m);", cuda_sources=SQUARE,
                         functions=["square"])
    assert "no C++" in str(e.value) and "mod.my_kernel[grid, block](x, y, n)" in str(e.value)
    with pytest.raises(kjit.UsageError, match="torch/extension.h"):
        kjit.load_inline(name="square", cuda_sources="#include <torch/extension.h>\n" + SQUARE)


def test_diff_and_resources(runtime):
    prog = kjit.Program("square.cu", SQUARE)
    a = runtime.compile(prog, arch="sm_90")
    b = runtime.compile(prog, arch="sm_90", fast_math=True, defines={"X": 1})
    same = kjit.diff(a, a)
    assert same.equal and not same
    d = kjit.diff(a.ptx, a.ptx.replace("mul.f32", "add.f32"))
    assert not d.equal and "add.f32" in str(d)
    assert kjit.diff(a, b).to_json().startswith("{")
    rows = kjit.resources(prog, arch="sm_90")
    (row,) = [r for r in rows if r["is_entry"]]
    assert row["function"] == "square_matrix_kernel" and row["symbol"] == "_Z20square_matrix_kernelPKfPfii"
    assert row["registers"] > 0 and row["arch"] == "sm_90"
    assert row["local"] == 0 and row["max_threads_per_block"] > 0  # read from the cubin (CUDA 13's ptxas says neither)
    with pytest.raises(kjit.UsageError):
        kjit.resources(runtime.compile(prog, arch="compute_90"))


@pytest.mark.parametrize("example", ["square.py", "profile_softmax.py"])
def test_examples_run(example, repo, tmp_path):
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, str(repo / "examples" / "python" / example), str(tmp_path / "t.json")],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    if kjit.driver_available() and kjit.device_count() > 0:
        if example == "square.py":
            assert "tensor([[ 1.,  4.,  9.],\n        [16., 25., 36.]], device='cuda:0')" in out.stdout
        else:
            assert "softmax_fused" in out.stdout
    else:
        assert "compiled" in out.stdout and "not " in out.stdout


def test_a_named_cache_folder_kjit_cannot_use_is_an_error(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)  # writable by anyone: never used for executable code
    with pytest.raises(kjit.UnavailableError, match=str(open_folder)):
        kjit.Runtime(cache_dir=str(open_folder))
    rt = kjit.Runtime(cache_dir=str(open_folder), cache_required="never")  # compiles without the cache
    assert rt.compile(kjit.Program("s.cu", SQUARE), arch="sm_90").outcome == "compiled"
    with pytest.raises(kjit.UsageError, match="expected never, when_named or always"):
        kjit.Runtime(cache_required="sometimes")
