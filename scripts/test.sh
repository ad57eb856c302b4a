#!/usr/bin/env bash
# Quick start, step 2: install what is missing, build everything, run the whole test suite.
# GPU tests (label gpu) report themselves skipped on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build
ctest --test-dir build --output-on-failure --timeout 600
