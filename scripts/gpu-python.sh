#!/usr/bin/env bash
# Runs on the GPU machine, in a copy of the repository with .gpu/prefix carried (an installed
# kjit: cmake --install build --prefix .gpu/prefix, plus DLPack's header in .gpu/prefix/include):
# pip-installs the Python package with the machine's Python, pybind11 and scikit-build-core, runs
# the Python tests (torch, CuPy), the gpu ones under compute-sanitizer, and with "peers" the peers
# benchmark with its kjit (Python) row. Results go to $OUT (or .out/).
set -uo pipefail
out=${OUT:-.out}
mkdir -p "$out"
root=$PWD
export PATH=/usr/local/cuda/bin:$PATH
site=/tmp/kjit-site
{ date -u; nvidia-smi -L; python3 --version; python3 -c "import pybind11; print('pybind11', pybind11.__version__)"; } 2>&1 | tee "$out/python-machine.txt"
echo "== pip install ./python"
rm -rf "$site"
python3 -m pip install --no-build-isolation --no-deps --target "$site" ./python \
  -Ccmake.define.CMAKE_PREFIX_PATH="$root/.gpu/prefix" -Ccmake.define.DLPACK_INCLUDE_DIR="$root/.gpu/prefix/include" \
  -Cbuild-dir=/tmp/kjit-pybuild > "$out/pip-install.txt" 2>&1
rc=$?; echo "pip exit $rc"; tail -3 "$out/pip-install.txt"
if [ $rc -ne 0 ]; then grep -i -A12 "CMake Error\|error:" "$out/pip-install.txt" | head -40; exit 1; fi
ls "$site/kjit" | tee -a "$out/pip-install.txt"
export PYTHONPATH=$site
echo "== import"; (cd /tmp && python3 -c "import kjit, sys; print(kjit.__version__, kjit.__file__, 'torch' in sys.modules)")
echo "== the kjit command (python -m kjit, pip's console script)"
(cd /tmp && python3 -m kjit info && "$site/bin/kjit" --version) 2>&1 | tee "$out/kjit-command.txt" | tail -4
echo "== pytest"; (cd /tmp && python3 -m pytest -q -p no:cacheprovider -rs "$root/python/tests" 2>&1 | tee "$out/pytest.txt" | tail -15)
echo "== memcheck (gpu tests)"
(cd /tmp && compute-sanitizer --tool memcheck --report-api-errors no python3 -m pytest -q -p no:cacheprovider -m gpu \
  "$root/python/tests" 2>&1 | tee "$out/pytest-memcheck.txt" | tail -6)
if [ "${1:-}" = peers ]; then
  echo "== peers"
  python3 bench/peers/peers.py --kjit "$root/.gpu/build/bench/bench_peers_kjit" --kjit-python "$site" \
    --out "$out/peers" --rounds "${ROUNDS:-3}" --warm-rounds "${WARM_ROUNDS:-7}" --budget "${BUDGET:-300}" 2>&1 | tail -25
fi
