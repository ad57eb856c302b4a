# CPU tests of the argument packer: every value goes through the kernel's parameter table (read
# from the PTX and the mangled name) and comes out at the parameter's width, or is refused with
# a TypeError (kjit.ArgumentError) naming the parameter, what was given and the whole list.
import random
import struct

import numpy as np
import pytest

import kjit

SOURCE = r"""
struct Pair { float a; int b; double c; };   // 16 bytes, aligned 8
struct Tiny { short s; char c; };            // 4 bytes, aligned 2
__global__ void widths(signed char i8, unsigned char u8, short i16, unsigned short u16, int i32, unsigned u32,
                       long long i64, unsigned long long u64, float f32, double f64, bool flag) {}
__global__ void pointers(const float* in, float* out, int n) {}
__global__ void structs(Pair p, Tiny t, float* out) {}
extern "C" __global__ void plain(float* p, unsigned n, long long q, double d, Pair s) {}
// A kernel made by a function-like macro: NVRTC is not asked its type, its PTX alone speaks.
#define BARE(name) extern "C" __global__ void name(float* p, unsigned n, long long q, double d, Pair s) {}
BARE(bare)
__global__ void overloaded(int) {}
__global__ void overloaded(float) {}
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    rt = kjit.Runtime(cache_dir=str(tmp_path_factory.mktemp("cache")))
    r = rt.compile(kjit.Program("args.cu", SOURCE), arch="sm_90")
    del r._source  # the PTX and the mangled names alone (with its source, signature() reads names too)
    return r


WIDTHS = [  # (struct format, low, high) per parameter of `widths`
    ("b", -2**7, 2**7 - 1), ("B", 0, 2**8 - 1), ("h", -2**15, 2**15 - 1), ("H", 0, 2**16 - 1),
    ("i", -2**31, 2**31 - 1), ("I", 0, 2**32 - 1), ("q", -2**63, 2**63 - 1), ("Q", 0, 2**64 - 1),
]


def expected_buffer(sig, values):
    out = bytearray(sig_bytes(sig))
    for p, (fmt, v) in zip(sig.parameters, values):
        offset = sig_offset(sig, p["index"])
        out[offset:offset + p["size"]] = struct.pack("<" + fmt, v)
    return bytes(out)


def sig_bytes(sig):
    end = 0
    for p in sig.parameters:
        end = (end + p["align"] - 1) // p["align"] * p["align"] + p["size"]
    return end


def sig_offset(sig, index):
    at = 0
    for p in sig.parameters:
        at = (at + p["align"] - 1) // p["align"] * p["align"]
        if p["index"] == index:
            return at
        at += p["size"]
    raise IndexError(index)


def test_parameter_table_from_ptx_and_mangled_name(result):
    sig = result.signature("widths")
    kinds = [(p["type"], p["ptx_type"], p["kind"], p["size"]) for p in sig.parameters]
    assert kinds == [
        ("signed char", ".u8", "signed integer", 1), ("unsigned char", ".u8", "unsigned integer", 1),
        ("short", ".u16", "signed integer", 2), ("unsigned short", ".u16", "unsigned integer", 2),
        ("int", ".u32", "signed integer", 4), ("unsigned int", ".u32", "unsigned integer", 4),
        ("long long", ".u64", "signed integer", 8), ("unsigned long long", ".u64", "unsigned integer", 8),
        ("float", ".f32", "floating point", 4), ("double", ".f64", "floating point", 8), ("bool", ".u8", "bool", 1),
    ]
    assert sig.parameters[0]["name"].endswith("_param_0")
    plain = result.signature("plain")  # extern "C": NVRTC's type query gives the C++ types
    assert [p["kind"] for p in plain.parameters] == [
        "pointer", "unsigned integer", "signed integer", "floating point", "bytes"]
    assert str(plain) == "plain(float* [.u64], unsigned int [.u32], long long [.u64], double [.f64], Pair [.b8[16]])"
    bare = result.signature("bare")  # no type from the compiler: the PTX's widths, unchecked
    assert [p["kind"] for p in bare.parameters] == [
        "pointer or 64-bit integer", "integer", "pointer or 64-bit integer", "floating point", "bytes"]
    assert str(bare).startswith("bare(.u64 [NVRTC was not asked its type")


def test_random_scalars_pack_at_every_width(result):
    sig = result.signature("widths")
    rng = random.Random(20261125)
    for _ in range(200):
        ints = [rng.randint(lo, hi) for _, lo, hi in WIDTHS]
        f32 = struct.unpack("<f", struct.pack("<f", rng.uniform(-1e6, 1e6)))[0]
        f64 = rng.uniform(-1e300, 1e300)
        flag = rng.random() < 0.5
        packed = sig.pack(*ints, f32, f64, flag)
        fmts = [f for f, _, _ in WIDTHS] + ["f", "d", "?"]
        assert packed == expected_buffer(sig, list(zip(fmts, ints + [f32, f64, flag])))


def test_numpy_scalars_pack_like_python_ones(result):
    sig = result.signature("widths")
    rng = np.random.default_rng(7)
    ints = [int(rng.integers(lo, hi, endpoint=True, dtype=np.int64 if hi < 2**63 else np.uint64))
            for _, lo, hi in WIDTHS]
    np_ints = [np.int8(ints[0]), np.uint8(ints[1]), np.int16(ints[2]), np.uint16(ints[3]), np.int32(ints[4]),
               np.uint32(ints[5]), np.int64(ints[6]), np.uint64(ints[7])]
    f32, f64 = np.float32(rng.standard_normal()), np.float64(rng.standard_normal())
    assert sig.pack(*np_ints, f32, f64, np.bool_(True)) == sig.pack(*ints, float(f32), float(f64), True)


def test_structs_pass_as_bytes_or_numpy_structured_scalars(result):
    sig = result.signature("structs")
    assert [(p["size"], p["align"]) for p in sig.parameters] == [(16, 8), (4, 2), (8, 8)]
    pair = struct.pack("<fiд".replace("д", "d"), 1.5, -7, 2.25)
    tiny = struct.pack("<hbx", -3, 9)
    packed = sig.pack(pair, tiny, None)
    assert packed[0:16] == pair and packed[16:20] == tiny and packed[24:32] == bytes(8)
    dtype = np.dtype([("a", "<f4"), ("b", "<i4"), ("c", "<f8")])
    scalar = np.array([(1.5, -7, 2.25)], dtype=dtype)[0]
    assert sig.pack(scalar, tiny, None) == packed
    with pytest.raises(kjit.ArgumentError, match=r"given 12 bytes: the parameter has 16 bytes"):
        sig.pack(pair[:12], tiny, None)
    with pytest.raises(kjit.ArgumentError, match=r"16-byte by-value parameter takes bytes"):
        sig.pack(3, tiny, None)


REFUSALS = [
    # (arguments of pointers(const float*, float*, int), what the message says)
    ((None, None, 2.5), r"argument 2 does not fit parameter #2 int .*given float 2.5: a float for a signed integer"),
    ((None, None, 2**31), r"given int 2147483648: out of range for a signed 32-bit integer"),
    ((None, None, -2**31 - 1), r"out of range for a signed 32-bit integer"),
    ((None, None, 2**70), r"out of range for every integer parameter"),
    ((7, None, 1), r"argument 0 .*float const\* .*given int 7: a pointer parameter takes a device array"),
    ((None, 1.0, 1), r"argument 1 .*given float 1: a pointer parameter takes a device array"),
    ((None, None, "3"), r"given str '3'"),
    ((None, None), r"given 2 arguments, the kernel takes 3: pointers\(float const\* \[.u64\], float\* \[.u64\], int"),
    ((None, None, 1, 2), r"given 4 arguments, the kernel takes 3"),
]


@pytest.mark.parametrize("args,message", REFUSALS)
def test_every_refusal_names_parameter_and_list(result, args, message):
    sig = result.signature("pointers")
    with pytest.raises(kjit.ArgumentError, match=message) as e:
        sig.pack(*args)
    assert isinstance(e.value, TypeError) and isinstance(e.value, kjit.UsageError)
    if len(args) == 3:
        assert "the kernel takes pointers(float const* [.u64], float* [.u64], int [.u32])" in str(e.value)


def test_unsigned_and_bool_ranges(result):
    sig = result.signature("widths")
    good = [1, 1, 1, 1, 1, 1, 1, 1, 1.0, 1.0, True]
    for index, value, why in [(1, -1, "negative for an unsigned integer"), (0, 128, "signed 8-bit"),
                              (3, 2**16, "unsigned 16-bit"), (7, -5, "negative"), (10, 2, "a bool takes 0 or 1"),
                              (8, True, "a bool for a floating point parameter")]:
        args = list(good)
        args[index] = value
        with pytest.raises(kjit.ArgumentError, match=why):
            sig.pack(*args)
    args = list(good)
    args[7] = 2**64 - 1
    assert sig.pack(*args)[sig_offset(sig, 7):][:8] == b"\xff" * 8
    args[8] = 3  # an int for a float converts
    assert struct.unpack_from("<f", sig.pack(*args), sig_offset(sig, 8))[0] == 3.0


def test_extern_c_u64_takes_pointer_or_integer(result):
    sig = result.signature("bare")
    pair = bytes(range(16))
    packed = sig.pack(None, 2**32 - 1, -1, 0.5, pair)
    assert packed[8:12] == b"\xff" * 4 and packed[16:24] == b"\xff" * 8
    with pytest.raises(kjit.ArgumentError, match="out of range for a 32-bit integer"):
        sig.pack(None, 2**32, 0, 0.5, pair)


def test_kernel_lookup_by_plain_name_overload_and_missing(result):
    assert result.signature("pointers").symbol == "_Z8pointersPKfPfi"
    with pytest.raises(kjit.UsageError, match=r"overloaded \(overloaded\(int\) \(_Z10overloadedi\); overloaded\(float\)"):
        result.signature("overloaded")
    assert result.signature("_Z10overloadedf").parameters[0]["type"] == "float"
    with pytest.raises(kjit.UsageError, match=r"no such kernel; it has .*widths\(signed char"):
        result.signature("nope")
