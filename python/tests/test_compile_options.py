# CPU tests: Python's compile keywords are C++'s table of CompileOptions' fields, each seen by the key.
import pytest

import kjit
from conftest import SQUARE

FIELDS = kjit._kjit.compile_option_fields()


def _example(field):
    kind, example = field["kind"], field["example"]
    if kind == "flag":
        return example == "true"
    if kind == "count":
        return int(example)
    if kind in ("text_list", "path_list", "raw_flags"):
        return [example]
    return example


def test_the_keywords_are_the_tables_rows():
    names = [f["name"] for f in FIELDS]
    assert kjit._OPTION_NAMES == tuple(names)
    assert "nvcc_environment" in names and "device_debug" in names
    options = kjit._kjit.CompileOptions()
    for f in FIELDS:
        assert hasattr(options, f["name"]), f["name"]


@pytest.mark.parametrize("field", FIELDS, ids=[f["name"] for f in FIELDS])
def test_each_keyword_flipped_reaches_the_options_and_the_key(runtime, field):
    prog = kjit.Program("s.cu", SQUARE)
    base = runtime.explain(prog, arch="sm_90")["key"]
    name, value = field["name"], _example(field)
    options = {"arch": "sm_90", name: value}
    o = kjit._options(**options)
    assert getattr(o, name) != getattr(kjit._options(arch="sm_90"), name)
    assert getattr(o, name) == value or name == "arch"
    assert runtime.explain(prog, **options)["key"] != base


def test_max_registers_takes_cs_one_range():
    f = next(f for f in FIELDS if f["name"] == "max_registers")
    assert (f["min"], f["max"]) == (0, 255)
    assert kjit._options(max_registers=255).max_registers == 255
    for bad in (-1, 256, 1000, True, 3.0):
        with pytest.raises(ValueError, match="max_registers"):
            kjit._options(max_registers=bad)
    o = kjit._kjit.CompileOptions()
    with pytest.raises(kjit.UsageError, match="0 to 255"):
        o.max_registers = 256  # the binding sets through C++'s check too


def test_nvcc_environment_off_is_its_own_entry(runtime):
    src = 'extern "C" __global__ void pi(float* x) { x[0] = M_PI; }'
    prog = kjit.Program("pi.cu", src)
    assert runtime.compile(prog, arch="sm_90").ptx
    with pytest.raises(kjit.CompileError):
        runtime.compile(prog, arch="sm_90", nvcc_environment=False)
