# What a newcomer reads when a call goes wrong (issue #57 item 15): the keyword meant for a slip in
# load_inline and kjit.Runtime, arch= named in an arch conflict, kjit.load without a GPU pointing to
# kjit.compile(..., arch="sm_90"), load_inline(verbose=True) saying how it was answered with the
# compile's notes. CPU only; random constants so no cache entry is shared by chance.
import random

import pytest

import kjit


def kernel():
    return f'extern "C" __global__ void k(float* x) {{ x[threadIdx.x] *= {random.randint(2, 10**6)}.0f; }}\n'


def test_load_inline_names_the_argument_or_flag_meant():
    with pytest.raises(TypeError) as flag:
        kjit.load_inline("t", cuda_sources=kernel(), functions=["k"], arch="sm_90", fastmath=True)
    message = str(flag.value)
    assert "fastmath= (kjit.compile's fast_math=" in message
    assert 'extra_cuda_cflags=["--use_fast_math"]' in message
    with pytest.raises(TypeError, match=r"functons= \(did you mean functions=\?\)"):
        kjit.load_inline("t", cuda_sources=kernel(), functons=["k"], arch="sm_90")
    with pytest.raises(TypeError) as stranger:
        kjit.load_inline("t", cuda_sources=kernel(), frobnicate=1, arch="sm_90")
    assert "frobnicate=" in str(stranger.value) and "did you mean" not in str(stranger.value)
    # What the message says works.
    r = kjit.load_inline("t", cuda_sources=kernel(), functions=["k"], arch="sm_90",
                         extra_cuda_cflags=["--use_fast_math"])
    assert "--use_fast_math" in r.options


def test_runtime_names_the_option_meant(tmp_path):
    with pytest.raises(kjit.UsageError) as e:
        kjit.Runtime(cache_dri=str(tmp_path))
    assert "kjit.Runtime: unknown option(s) cache_dri= (did you mean cache_dir=?)" in str(e.value)
    assert "RuntimeConfig" not in str(e.value)
    assert kjit.Runtime(cache_dir=str(tmp_path)).cache_dir == tmp_path


def test_an_arch_conflict_names_arch_as_python_spells_it(runtime):
    with pytest.raises(kjit.UsageError) as e:
        runtime.compile(kjit.Program("a.cu", kernel()), arch="sm_80", flags=["-arch=sm_90"])
    assert "arch=" in str(e.value) and "Python's arch=" in str(e.value)


def test_load_without_a_gpu_points_to_compile_with_an_arch(runtime):
    if kjit.driver_available() and kjit.device_count() > 0:
        pytest.skip("a GPU here: the load works")
    with pytest.raises(kjit.DriverNotFoundError) as e:
        runtime.load(kjit.Program("a.cu", kernel()))
    assert 'kjit.compile(program, arch="sm_90")' in str(e.value)
    # As it says: compiles without one.
    assert ".entry k" in runtime.compile(kjit.Program("a.cu", kernel()), arch="sm_90").ptx


def test_load_inline_verbose_says_how_it_was_answered(capfd, cache_dir):
    # A tutorial's host code: kjit leaves it out, and says so; verbose shows that note and the key.
    source = kernel() + "int main() { return 0; }\n"
    r = kjit.load_inline("verbose_t", cuda_sources=source, functions=["k"], arch="sm_90", verbose=True,
                         build_directory=str(cache_dir))
    err = capfd.readouterr().err
    assert f"kjit: info: load_inline verbose_t: compiled (key {r.key}, cache {cache_dir}" in err
    assert "host code left out: main" in err
    kjit.load_inline("verbose_t", cuda_sources=source, functions=["k"], arch="sm_90", verbose=True,
                     build_directory=str(cache_dir))
    assert "load_inline verbose_t: cache hit" in capfd.readouterr().err
    # Not verbose: nothing.
    kjit.load_inline("verbose_t", cuda_sources=source, functions=["k"], arch="sm_90", build_directory=str(cache_dir))
    assert capfd.readouterr().err == ""
