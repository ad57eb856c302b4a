#!/usr/bin/env bash
# Developer helper: copies a built tree (default build-gpu) without object files into .gpu/ so that
# it fits the GPU machine's carry limit; scripts/gpu-check.sh runs there against it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-build-gpu}
rm -rf .gpu && mkdir -p .gpu
tar -C . --exclude='*.o' --exclude='*.a' --exclude='.ninja_*' --exclude='*/CMakeFiles/*.dir' -cf - "$src" | tar -C .gpu -xf -
du -sh .gpu
