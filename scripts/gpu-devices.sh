#!/usr/bin/env bash
# Developer helper for a GPU machine that has CMake, ninja, the CUDA toolkit, torch, CuPy and
# pybind11 but none of kjit's Debian dependencies: builds kjit there (16 cores) from a source tree
# (SRC, default: this checkout) against dependencies carried in .gpu/deps (headers and static
# libraries copied from a Debian 12 machine: fmt, nlohmann-json, dtl, xxHash, hiredis,
# libsodium, doctest, CLI11, DLPack; redis-server and nginx for the remote tier's tests), then runs,
# by the steps named (default: build test):
#   build   everything: kjit, its CLI and tools, the Python package in the build tree, tests, benchmarks
#   test    ctest -L gpu, the Python tests (two devices, torch.compile, ...), compute-sanitizer
#           memcheck over the Python GPU tests that need no compiler (torch.compile runs apart)
#   ci      the Python tests as CI runs them (torch and CuPy hidden, no GPU visible), the install
#           route's ctest, the walls
#   bench   bench/python/launch_breakdown.py, op_overhead.py and hot_breakdown.py, bench_launch,
#           bench_prepare, bench_cold, bench_link, bench_remote (Redis and HTTP levels; REMOTE_ARGS,
#           default "21 4 16": runs, fleet processes, kernels), bench/peers
#           (ROUNDS cold rounds, default 11, WARM_ROUNDS, ONLY=kjit,cupy,...; PEERS=0: none)
#   pip     pip install ./python with no installed kjit (it builds libkjit itself), then an
#           import from another folder with the CUDA toolkit hidden (NVRTC from torch's packages)
# Results go to $OUT (or .out/): build.txt, ctest-gpu.txt, pytest.txt, memcheck.txt, bench.txt, ...
# BENCH_PY="launch_breakdown ...": the bench/python programs the bench step runs (default: launch_breakdown,
# op_overhead, hot_breakdown; OP_CALLS: op_overhead's calls a run); TARGETS="a b": build only those targets; PYTEST="args": the test step's pytest selection (default:
# every Python test); MEMCHECK=0: no compute-sanitizer pass.
set -uo pipefail
out=${OUT:-$PWD/.out}
mkdir -p "$out"
root=$PWD
src=$(cd "${SRC:-.}" && pwd)
b=$root/.gpu/b
deps=$root/.gpu/deps
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda/bin:$PATH
steps=${*:-build test}
has() { [[ " $steps " == *" $1 "* ]]; }

{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1; python3 --version
  python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)"; } 2>&1 | tee -a "$out/machine.txt"

if has build; then
  echo "== build"
  t=$(date +%s)
  cmake -S "$src" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$deps" \
    -DKJIT_BUILD_PYTHON=ON -DPython3_EXECUTABLE="$(command -v python3)" -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" \
    -DDLPACK_INCLUDE_DIR="$deps/include" > "$out/build.txt" 2>&1 \
    && cmake --build "$b" -j "$(nproc)" ${TARGETS:+--target $TARGETS} >> "$out/build.txt" 2>&1
  rc=$?; echo "build exit $rc in $(( $(date +%s) - t )) s"
  if [ $rc -ne 0 ]; then grep -B2 -A12 "error\|Error" "$out/build.txt" | head -60; exit 1; fi
fi
export PYTHONPATH=$b/python
# The servers gpu-deps.sh carried, for the Redis and HTTP tests and bench_remote (else they skip there).
[ -x "$deps/redis/redis-server" ] && export KJIT_REDIS_SERVER=$deps/redis/redis-server
[ -x "$deps/nginx/nginx" ] && export KJIT_NGINX=$deps/nginx/nginx
if has pytest; then
  echo "== pytest"
  (cd /tmp && timeout 420 python3 -m pytest -q -p no:cacheprovider -rs "$src/python/tests" 2>&1 | tee "$out/pytest.txt" | tail -6)
fi
if has test; then
  echo "== ctest -L gpu"
  (cd "$b" && ctest -L gpu --output-on-failure -j 1 --timeout 300 2>&1 | tee "$out/ctest-gpu.txt" | tail -15)
  echo "== pytest"
  (cd /tmp && timeout 420 python3 -m pytest -q -p no:cacheprovider -rs ${PYTEST:-"$src/python/tests"} 2>&1 | tee "$out/pytest.txt" | tail -25)
  [ "${MEMCHECK:-1}" = 0 ] || echo "== memcheck"
  [ "${MEMCHECK:-1}" = 0 ] || (cd /tmp && timeout ${MEMCHECK_TIMEOUT:-300} compute-sanitizer --tool memcheck --report-api-errors no python3 -m pytest -q -p no:cacheprovider -m gpu \
    -k "not compile and not reduce_overhead and not gradcheck and not array_interface_stream" "$src/python/tests" 2>&1 | tee "$out/memcheck.txt" | tail -6)
fi
if has ci; then
  echo "== as CI runs them: no torch, no CuPy, no GPU (python tests, the install route, the walls)"
  mkdir -p /tmp/hide/torch /tmp/hide/cupy
  for m in torch cupy; do echo 'raise ModuleNotFoundError("hidden for a CI-like run")' > /tmp/hide/$m/__init__.py; done
  (cd /tmp && CUDA_VISIBLE_DEVICES= PYTHONPATH=/tmp/hide:$b/python python3 -m pytest -q -p no:cacheprovider -rs \
    "$src/python/tests" 2>&1 | tee "$out/pytest-ci.txt" | tail -12)
  (cd "$b" && CUDA_VISIBLE_DEVICES= ctest -R "python/install_user_site|layers|exports|no_binary" --output-on-failure 2>&1 \
    | tee "$out/ctest-ci.txt" | tail -8)
fi
if has bench; then
  echo "== bench"
  { for py in ${BENCH_PY:-launch_breakdown op_overhead hot_breakdown}; do
      echo "== $py"; (cd "$src" && python3 "bench/python/$py.py" ${OP_CALLS:+$( [ "$py" = op_overhead ] && echo "$OP_CALLS")}); echo
    done
    "$b/bench/bench_launch" 2>&1 | tail -12
    for p in bench_prepare bench_cold bench_link bench_remote; do
      bin=$(find "$b/bench" -name "$p" -type f -perm -u+x | head -1)
      [ -n "$bin" ] || continue
      echo; echo "== $p"
      case $p in bench_prepare|bench_cold) "$bin" --repeats "${ROUNDS:-11}" ;; bench_link) "$bin" 31 ;; *) "$bin" ${REMOTE_ARGS:-21 4 16} ;; esac
    done; } 2>&1 | tee "$out/bench.txt"
  [ "${PEERS:-1}" = 0 ] || python3 "$src/bench/peers/peers.py" --kjit "$b/bench/bench_peers_kjit" --kjit-python "$b/python" --out "$out/peers" \
    --rounds "${ROUNDS:-11}" --warm-rounds "${WARM_ROUNDS:-7}" --timeout 200 ${ONLY:+--only "$ONLY"} 2>&1 | tail -20
fi
if has pip; then
  echo "== pip install ./python (no installed kjit: it builds libkjit)"
  t=$(date +%s)
  rm -rf /tmp/kjit-site /tmp/kjit-pip
  python3 -m pip install --no-build-isolation --no-deps --target /tmp/kjit-site "$src/python" \
    -Ccmake.define.CMAKE_PREFIX_PATH="$deps" -Ccmake.define.DLPACK_INCLUDE_DIR="$deps/include" \
    -Cbuild-dir=/tmp/kjit-pip -Ccmake.build-type=Release > "$out/pip.txt" 2>&1
  echo "pip exit $? in $(( $(date +%s) - t )) s"; ls /tmp/kjit-site/kjit | tee -a "$out/pip.txt"
  echo "== the installed package, the toolkit hidden (NVRTC and headers from torch's nvidia packages)"
  mkdir -p /tmp/hidden-cuda && mv /usr/local/cuda /usr/local/cuda-1* /tmp/hidden-cuda/
  py=$(command -v python3)
  (cd / && env -u CUDA_HOME -u CUDA_PATH PATH=/usr/bin:/bin LD_LIBRARY_PATH= PYTHONPATH=/tmp/kjit-site \
     "$py" "$src/python/tests/no_toolkit_check.py" 2>&1 | tee "$out/no-toolkit.txt")
  mv /tmp/hidden-cuda/* /usr/local/
fi
