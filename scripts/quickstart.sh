#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build kjit (what `cmake --install build` installs:
# the libraries, the CLI, the profiler's injection library) and examples/square, run it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target kjit_installable square
build/examples/square/square
