"""A user's mistakes that mypy must report (python/tests/check_types.py): each line ending in
"# error: CODE" is reported with that code, and no other line is. Never run."""
from __future__ import annotations

import kjit

SOURCE = 'extern "C" __global__ void square(float* y) { y[0] = 1; }'
program = kjit.Program("square.cu", SOURCE)
result = kjit.compile(program, arch="sm_90")

kjit.compile(SOURCE, arch="sm_90")  # error: arg-type
kjit.Program("square.cu")  # error: call-arg
module = kjit.load(program)
module.kernel(3)  # error: arg-type
wrong_kind: kjit.Module = kjit.load_inline("square", cuda_sources=SOURCE, arch="sm_90")  # error: assignment
not_a_list: list[float] = kjit.bench(lambda: None)  # error: assignment
kjit.bench(lambda: None, return_mode="average")  # error: call-overload
kjit.bench(42)  # error: call-overload
options = kjit._kjit.CompileOptions()
options.fast_mth = True  # error: attr-defined
options.max_registers = "32"  # error: assignment
kjit.profile(metrics=3)  # error: arg-type
kjit.diff(result, 3)  # error: arg-type
kjit.resources("square.cu")  # error: arg-type
text: str = module.outcome.lower() + module.device  # error: operator
