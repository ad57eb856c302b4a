#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build kjit, run examples/square.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target kjit_cli square
build/examples/square/square
