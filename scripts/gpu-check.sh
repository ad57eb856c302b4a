#!/usr/bin/env bash
# Runs on the GPU machine, in a copy of the repository with .gpu/build-gpu carried: the example,
# the gpu-labelled tests, the same under compute-sanitizer memcheck, and the benchmarks.
# Results go to $OUT (or .out/). memcheck runs with --report-api-errors no: kjit probes
# cuFuncGetParamInfo past the last parameter and the tests look up missing kernels on purpose.
set -uo pipefail
out=${OUT:-.out}
mkdir -p "$out"
root=$PWD
if [ "$root" != /work/main ]; then mkdir -p /work && ln -sfn "$root" /work/main; fi
ln -sfn .gpu/build-gpu build-gpu
export PATH=/usr/local/cuda/bin:$PATH
b=/work/main/build-gpu
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } 2>&1 | tee "$out/machine.txt"
echo "== square"; $b/examples/square/square 2>&1 | tee "$out/square.txt"
echo "== gpu tests"; ctest --test-dir $b -L gpu --output-on-failure 2>&1 | tee "$out/ctest_gpu.txt" | tail -15
echo "== memcheck"; compute-sanitizer --tool memcheck --report-api-errors no $b/tests/kjit_gpu_tests 2>&1 | tee "$out/memcheck.txt" | tail -6
for bench in "$@"; do echo "== $bench"; $b/bench/$bench 2>&1 | tee "$out/$bench.txt"; done
