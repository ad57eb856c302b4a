"""A typed user of kjit's public layer, never run: mypy --strict accepts it (python/tests/check_types.py).
Each line is what a user writes; the annotations say what they get."""
from __future__ import annotations

import pathlib
from typing import Any

import kjit

SOURCE = 'extern "C" __global__ void square(const float* x, float* y, int n) { y[0] = x[0] * x[0]; }'


def compile_load_launch(x: Any, y: Any) -> float:
    program: kjit.Program = kjit.Program("square.cu", SOURCE).header("common.cuh", "").instantiate("f<int>")
    result: kjit.CompileResult = kjit.compile(program, arch="sm_90", fast_math=True, defines={"N": 4})
    ptx: str = result.ptx
    cubin: bytes = result.cubin
    from_file: kjit.Program = kjit.read_program(pathlib.Path("square.cu"))

    rt = kjit.Runtime(cache_dir="/tmp/kjit-typed")
    module: kjit.Module = rt.load(program, device="cuda:0", max_registers=64)
    again: kjit.Module = kjit.load(from_file, device=0)
    loaded: kjit.Module = kjit.load(result)
    kernel: kjit.Kernel = module.kernel("square")
    by_attribute: kjit.Kernel = module.square
    kernel[(1, 1), (16, 16)](x, y, 3)
    by_attribute.launch((1,), (32,), args=[x, y, 3], shared_mem=0)
    names: list[str] = module.kernel_names + again.kernel_names + loaded.global_names
    module.globals["table"][:] = b"\0" * 16
    outcome: str = module.outcome
    explained: dict[str, Any] = rt.explain(program, arch="sm_90")

    inline: kjit.Module = kjit.load_inline(name="square", cuda_sources=SOURCE, functions=["square"])
    checked: kjit.CompileResult = kjit.load_inline("square", cuda_sources=[SOURCE], functions="square", arch="sm_90")
    inline.square[(1,), (32,)](x, y, 3)

    with kjit.profile(metrics="sol") as p:
        with kjit.range("decode"):
            kernel[(1,), (32,)](x, y, 3)
    rows: list[dict[str, Any]] = p.summary(limit=5)
    table: str = p.table()

    mean: float = kjit.bench(lambda: kernel[(1,), (32,)](x, y, 3))
    samples: list[float] = kjit.bench(lambda: None, return_mode="all")
    either: float | list[float] = kjit.bench(lambda: None, quantiles=[0.5, 0.9])

    difference = kjit.diff(result, checked)
    same: bool = difference.equal and not kjit.diff(ptx, checked.ptx)
    usage: list[dict[str, Any]] = kjit.resources(program, arch="sm_90") + kjit.resources(result)
    registers: int = usage[0]["registers"]

    try:
        kjit.compile(kjit.Program("bad.cu", "nonsense"), arch="sm_90")
    except kjit.CompileError as e:
        log: str = e.log
        print(log, cubin, names, outcome, explained, rows, table, samples, either, same, registers)
    return mean
