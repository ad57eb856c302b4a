#!/usr/bin/env bash
# Quick start, step 2: install what is missing, build everything, run the whole test suite.
# GPU tests (label gpu) report themselves skipped on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
# Tests run in parallel, one per core: each case makes its own folders, servers and ports; the few
# that cannot overlap (the consumer builds, the compile-fail controls) are RUN_SERIAL.
ctest --test-dir build --output-on-failure --timeout 600 --parallel "$(nproc)"
