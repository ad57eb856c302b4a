# What a newcomer and an attacker give kjit's Python API: torch's load_inline order, option strings,
# bad values of every kind, NUL bytes and Latin-1 logs. Every bad input is a kjit.Error, a TypeError
# or a ValueError that names the argument; nothing here needs a GPU (issue #40 items 9, 15, 25;
# issue #39: Runtime options from C++'s table).
import os

import pytest

import kjit
from conftest import SQUARE

CPP_WRAPPER = r"""
torch::Tensor square_matrix(torch::Tensor matrix) {
  const auto height = matrix.size(0);
  const auto width = matrix.size(1);
  auto result = torch::empty_like(matrix);
  return result;
}
"""


# --- #40 item 9: the lecture's cuda_sources, torch's argument order, arch= without a GPU -------------

def test_load_inline_takes_torch_positional_order_and_compiles_without_a_gpu():
    r = kjit.load_inline("sq_order", "", SQUARE, ["square_matrix_kernel"], arch="sm_90", no_implicit_headers=True)
    assert isinstance(r, kjit.CompileResult) and r.arch == "sm_90"
    assert ".entry" in r.ptx and "square_matrix_kernel" in r.ptx


def test_load_inline_without_a_driver_points_to_arch():
    if kjit.driver_available():
        pytest.skip("a driver is here: load_inline loads")
    with pytest.raises(kjit.DriverNotFoundError, match="arch="):
        kjit.load_inline("sq_nodriver", cuda_sources=SQUARE, functions=["square_matrix_kernel"])


def test_load_inline_arch_checks_the_functions():
    with pytest.raises(kjit.UsageError, match="not_there"):
        kjit.load_inline("sq_missing", cuda_sources=SQUARE, functions=["not_there"], arch="sm_90")


def test_load_inline_cuda_source_given_as_cpp_sources_says_the_order():
    with pytest.raises(kjit.UsageError, match="torch's argument order"):
        kjit.load_inline("sq_swapped", SQUARE)


def test_load_inline_torch_wrapper_in_cuda_sources_gets_the_cpp_sources_help():
    with pytest.raises(kjit.UsageError) as e:
        kjit.load_inline("sq_wrapper", cuda_sources=SQUARE + CPP_WRAPPER, functions=["square_matrix_kernel"],
                         arch="sm_90")
    text = str(e.value)
    assert "torch::" in text and "mod.my_kernel[grid, block](x, y, n)" in text and "NVRTC said" in text
    assert isinstance(e.value.__cause__, kjit.CompileError)


def test_load_inline_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError, match="bogus"):
        kjit.load_inline("sq", cuda_sources=SQUARE, bogus=1)


# --- #40 item 15: errors that name the argument, not the binding ----------------------------------

def test_compile_of_a_string_says_what_to_pass():
    with pytest.raises(TypeError) as e:
        kjit.compile("__global__ void k() {}", arch="sm_90")
    assert "kjit.Program" in str(e.value) and "overload" not in str(e.value)


def test_unknown_compile_option_names_it_and_the_options():
    with pytest.raises(TypeError) as e:
        kjit.compile(kjit.Program("s.cu", SQUARE), arch="sm_90", fastmath=True)
    assert "fastmath" in str(e.value) and "fast_math" in str(e.value) and "_options" not in str(e.value)


def test_flags_string_is_split_as_the_cli_does(runtime):
    r = runtime.compile(kjit.Program("s.cu", SQUARE), arch="sm_90", flags="-lineinfo --use_fast_math")
    assert "-lineinfo" in r.options or "--generate-line-info" in r.options
    assert "--use_fast_math" in r.options


def test_diff_labels_say_which_side_has_which_options(runtime):
    prog = kjit.Program("square.cu", SQUARE)
    a = runtime.compile(prog, arch="sm_90")
    b = runtime.compile(prog, arch="sm_90", fast_math=True)
    text = kjit.diff(a, b).to_text()
    assert "--use_fast_math" in text


# --- #40 item 25: every bad input inside kjit's hierarchy, named -------------------------------------

BAD_INPUTS = [
    ("Runtime(cache_max_size=-1)", lambda: kjit.Runtime(cache_max_size=-1), "cache_max_size"),
    ("Runtime(cache_max_size='lots')", lambda: kjit.Runtime(cache_max_size="lots"), "cache_max_size"),
    ("Runtime(cache_dir with NUL)", lambda: kjit.Runtime(cache_dir="/tmp/a\0b"), "cache_dir"),
    ("Runtime(cache_dir=3.5j)", lambda: kjit.Runtime(cache_dir=3.5j), "cache_dir"),
    ("Runtime(lock_timeout='soon')", lambda: kjit.Runtime(lock_timeout="soon"), "lock_timeout"),
    ("Runtime(remote_timeout=0)", lambda: kjit.Runtime(remote_timeout=0), "remote_timeout"),
    ("Runtime(cache_required='sometimes')", lambda: kjit.Runtime(cache_required="sometimes"), "cache_required"),
    ("Runtime(log_level='loud')", lambda: kjit.Runtime(log_level="loud"), "log_level"),
    ("Runtime(bogus=1)", lambda: kjit.Runtime(bogus=1), "bogus"),
    ("compile(arch='sm_9000x')", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), arch="sm_9000x"), "sm_9000x"),
    ("compile(max_registers=-3)", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), max_registers=-3),
     "max_registers"),
    ("compile(defines=5)", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), defines=5), "defines"),
    ("compile(flags=[1])", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), flags=[1]), "flags"),
    ("compile(defines NUL)", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), arch="sm_90", defines=["A\0B"]),
     "defines"),
    ("compile(flags NUL)", lambda: kjit.compile(kjit.Program("s.cu", SQUARE), arch="sm_90", flags=["-DA\0B"]),
     "flags"),
    ("compile(instantiate NUL)",
     lambda: kjit.compile(kjit.Program("s.cu", "template <int N> __global__ void t() {}").instantiate("t<1>\0x"),
                          arch="sm_90"), "name expression"),
    ("Program(None, src)", lambda: kjit.Program(None, SQUARE), "Program"),
    ("load(device='tpu:0')", lambda: kjit.load(kjit.Program("s.cu", SQUARE), device="tpu:0"), "device"),
    ("resources(42)", lambda: kjit.resources(42), "kjit.resources"),
    ("diff(1, 2)", lambda: kjit.diff(1, 2), "kjit.diff"),
    ("read_program(NUL)", lambda: kjit.read_program("/tmp/a\0b.cu"), ""),
    ("load_inline(name=3)", lambda: kjit.load_inline(3, cuda_sources=SQUARE), "name"),
    ("load_inline(cuda_sources=[1])", lambda: kjit.load_inline("x", cuda_sources=[1], arch="sm_90"), "cuda_sources"),
    ("bench(return_mode='fast')", lambda: kjit.bench(lambda: None, return_mode="fast"), ""),
]


@pytest.mark.parametrize("what,call,named", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_kjits_error_or_a_type_or_value_error_naming_it(what, call, named):
    with pytest.raises((kjit.Error, TypeError, ValueError)) as e:
        call()
    assert type(e.value).__module__ in ("kjit", "builtins"), f"{what}: {type(e.value)}"
    assert "Unable to cast" not in str(e.value) and "incompatible function arguments" not in str(e.value), str(e.value)
    if named:
        assert named in str(e.value), f"{what}: {e.value}"


def test_runtime_options_are_cs_table():
    options = kjit._kjit.runtime_options()
    names = [o["name"] for o in options]
    # Every field of RuntimeConfig but the log callback, each with the KJIT_* variable it mirrors.
    assert len(names) == 25 and len(set(names)) == 25
    for n in ("cache_dir", "cache_required", "cache_max_size", "lock_timeout", "lock_stale_after", "dump_hits",
              "wait_progress_every", "log_level", "remote_timeout", "remote_ttl", "remote_max_value_size"):
        assert n in names
    assert {o["name"]: o["variable"] for o in options}["cache_max_size"] == "KJIT_CACHE_MAX_SIZE"


def test_runtime_takes_every_option(tmp_path):
    values = {"cache_dir": tmp_path / "c", "cache_required": "always", "cache_max_size": "64M", "cache_disabled": False,
              "always_compile": True, "lock_timeout": "30s", "lock_stale_after": "20s", "wait_progress_every": "2s",
              "dump_dir": str(tmp_path / "d"), "dump_hits": True, "precompiled_headers": False, "log_level": "error",
              "cache_shared": False, "remote_cache": "", "remote_read_only": True, "remote_secret_file": "",
              "remote_signing_key_file": "", "remote_public_key_file": "", "remote_http_auth_file": "",
              "remote_timeout": "75ms", "remote_ttl": "1d", "remote_max_value_size": 1 << 20, "require_hit": False,
              "nvrtc_fast": True, "prepare": False}
    assert sorted(values) == sorted(o["name"] for o in kjit._kjit.runtime_options())
    rt = kjit.Runtime(**values)
    assert os.fspath(rt.cache_dir) == str(tmp_path / "c")
    r = rt.compile(kjit.Program("s.cu", SQUARE), arch="sm_90")
    assert r.outcome == "compiled"
    assert rt.compile(kjit.Program("s.cu", SQUARE), arch="sm_90").outcome == "compiled"  # always_compile


# --- #40 item 25: logs with Latin-1 bytes --------------------------------------------------------

def test_latin1_in_a_failing_log_is_still_a_compile_error(tmp_path, runtime):
    f = tmp_path / "latin1.cu"
    f.write_bytes(b"__global__ void k(float* x) { x[0] = caf\xe9; }\n")
    with pytest.raises(kjit.CompileError) as e:
        runtime.compile(kjit.read_program(str(f)), arch="sm_90")
    assert "\ufffd" in e.value.log and "undefined" in e.value.log


def test_latin1_in_a_warning_log_of_a_successful_compile(tmp_path, runtime):
    f = tmp_path / "warn.cu"
    f.write_bytes(b"#warning \"caf\xe9\"\n__global__ void k(float* x) { x[0] = 1.0f; }\n")
    r = runtime.compile(kjit.read_program(str(f)), arch="sm_90")
    assert "caf\ufffd" in r.log and not r.log.endswith("\0")


# --- #52 item 21: inputs that raised outside kjit's errors ----------------------------------------

_ITEM21 = r"""
struct Pair { float a; int b; };
extern "C" __global__ void take(const float* x, Pair p, int n) {}
"""


@pytest.fixture(scope="module")
def take_signature(tmp_path_factory):
    rt = kjit.Runtime(cache_dir=str(tmp_path_factory.mktemp("c21")))
    s = rt.compile(kjit.Program("take.cu", _ITEM21), arch="sm_90").signature("take")
    assert s.read_declaration(_ITEM21)
    return s


class _ArrayInterface:
    def __init__(self, data):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": data, "version": 3}


class _DLPack:
    def __init__(self, device):
        self._device = device

    def __dlpack__(self, stream=None):
        raise AssertionError("not reached: the device is refused first")

    def __dlpack_device__(self):
        return self._device


@pytest.mark.parametrize("data", [(-1, False), ("x", False), (1.5, False)])
def test_an_array_interface_with_a_bad_pointer_is_an_argument_error(take_signature, data):
    with pytest.raises(kjit.ArgumentError, match=r"argument 0 .*x.*data pointer is .*non-negative int"):
        take_signature.pack(_ArrayInterface(data), b"\1" * 8, 3)


@pytest.mark.parametrize("device", [(2,), "cuda", (2, "0"), None])
def test_a_bad_dlpack_device_is_an_argument_error(take_signature, device):
    with pytest.raises(kjit.ArgumentError, match=r"argument 0 .*__dlpack_device__\(\) returned"):
        take_signature.pack(_DLPack(device), b"\1" * 8, 3)


def test_a_non_contiguous_buffer_for_a_struct_is_an_argument_error(take_signature):
    strided = memoryview(bytearray(range(16)))[::2]  # 8 bytes, not contiguous
    with pytest.raises(kjit.ArgumentError, match=r"argument 1 .*p.*memoryview that is not contiguous"):
        take_signature.pack(None, strided, 3)
    packed = take_signature.pack(None, bytes(strided), 3)  # the way out the message names
    assert packed[8:16] == bytes(range(0, 16, 2))


def test_a_lone_surrogate_in_a_program_is_a_usage_error():
    with pytest.raises(kjit.UsageError, match=r"source is not valid Unicode \(a lone surrogate U\+D800 at character 3\)"):
        kjit.Program("a.cu", "abc\ud800")
    with pytest.raises(kjit.UsageError, match=r"name is not valid Unicode"):
        kjit.Program("\udc80.cu", "__global__ void k() {}")
