# Where Python and the CLI said different things (issue #52 items 15 and 16): kjit.info() has
# the CLI's keys and values, kjit.resources() of a result compiled without ptxas's report
# raises instead of returning [], a str of extra_cuda_cflags is split like flags=, a misspelled
# option is answered with the one meant, and errors spell no C++. CPU only.
import json
import pathlib
import random
import subprocess

import pytest

import kjit


def kernel():
    # A random factor: no two runs share a cache entry by accident.
    return f'extern "C" __global__ void k(float* x) {{ x[threadIdx.x] *= {random.randint(2, 10**6)}.0f; }}\n'


def cli():
    """The kjit executable of the build this package comes from (build/python/kjit -> build/cli/kjit)."""
    path = pathlib.Path(kjit.__file__).resolve().parents[2] / "cli" / "kjit"
    return path if path.exists() else None


def test_info_has_the_cli_keys_and_values():
    info = kjit.info()
    assert isinstance(info["driver"], bool)
    assert info["driver"] == kjit.driver_available()
    if not info["driver"]:
        assert info["driver_error"] == kjit.driver_unavailable_reason() and info["driver_error"]
        assert info["devices"] == []
    assert info["supported_archs"] and all(a.startswith("sm_") for a in info["supported_archs"])
    assert "sm_90" in info["supported_archs"]
    root = pathlib.Path(info["toolkit_root"])
    assert (root / "include" / "cuda_runtime.h").exists()
    assert info["include_dirs"] == info["toolkit_include_dirs"]
    assert (info["disassembler"] is None) == ("disassembler_error" in info)
    kjit_cli = cli()
    if kjit_cli is None:
        pytest.skip("no kjit executable beside this build of the package")
    theirs = json.loads(subprocess.run([str(kjit_cli), "--json", "info"], capture_output=True, text=True,
                                       check=True).stdout)
    for key in ("kjit_version", "nvrtc_version", "nvrtc_library", "toolkit_root", "toolkit_include_dirs",
                "disassembler", "disassembler_error", "supported_archs", "driver", "driver_error", "devices",
                "cache_dir"):
        assert (key in info) == (key in theirs), key
        if key in info and key != "cache_dir":
            assert info[key] == theirs[key], key


def test_resources_of_a_result_without_the_report_raises_and_says_how():
    program = kjit.Program("plain.cu", kernel())
    plain = kjit.compile(program, arch="sm_90")
    with pytest.raises(kjit.UsageError, match=r"without ptxas's report.*kjit\.resources\(program, arch=\"sm_90\"\)"):
        kjit.resources(plain)
    # The two ways out the message names.
    usage = kjit.resources(program, arch="sm_90")
    assert [u["function"] for u in usage] == ["k"] and usage[0]["registers"] > 0
    reported = kjit.compile(program, arch="sm_90", flags=["-Xptxas=-v"])
    assert kjit.resources(reported)[0]["registers"] == usage[0]["registers"]
    # A program without functions has nothing to report: no error.
    assert kjit.resources(kjit.compile(kjit.Program("empty.cu", "// nothing\n"), arch="sm_90")) == []


def test_extra_cuda_cflags_as_one_string_is_split_like_flags():
    src = kernel().replace('extern "C" ', "")
    one = kjit.load_inline("split_one", cuda_sources=src, functions=["k"], extra_cuda_cflags="-O3 --use_fast_math",
                           arch="sm_90")
    listed = kjit.load_inline("split_one", cuda_sources=src, functions=["k"], extra_cuda_cflags=["-O3", "--use_fast_math"],
                              arch="sm_90")
    assert "--use_fast_math" in one.options
    assert one.options == listed.options
    assert one.key == listed.key


def test_a_misspelled_option_names_the_one_meant():
    program = kjit.Program("typo.cu", kernel())
    with pytest.raises(TypeError, match=r"fastmath= \(did you mean fast_math=\?\)"):
        kjit.compile(program, arch="sm_90", fastmath=True)
    with pytest.raises(TypeError, match=r"max_regs= \(did you mean max_registers=\?\)|max_regs="):
        kjit.compile(program, arch="sm_90", max_regs=32)
    with pytest.raises(TypeError) as stranger:
        kjit.compile(program, arch="sm_90", frobnicate=1)
    assert "did you mean" not in str(stranger.value)


def test_errors_spell_no_cpp():
    result = kjit.compile(kjit.Program("tmpl.cu", "template <class T> __global__ void scale(T* x) { x[0] *= 2; }\n"
                                                  "template __global__ void scale<int>(int*);\n"), arch="sm_90")
    with pytest.raises(kjit.UsageError) as e:
        result.signature("scale<float>")
    assert "::instantiate" not in str(e.value)
    assert 'instantiate("name<args>")' in str(e.value)
