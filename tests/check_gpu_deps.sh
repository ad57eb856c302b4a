#!/usr/bin/env bash
# scripts/gpu-deps.sh carries the servers themselves (#58): redis-server and nginx as files, never
# Debian's links (/usr/bin/redis-server points at redis-check-rdb, and a carried link dangles on the
# GPU machine), each started through its wrapper. Its copy, made in a temporary folder, serves a
# Redis test and an HTTP test, which must pass, not skip.
#   check_gpu_deps.sh SOURCE_DIR KJIT_CACHE_TESTS
set -euo pipefail
src=$1
tests=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! GPU_DEPS_DIR="$tmp/deps" bash "$src/scripts/gpu-deps.sh" > "$tmp/log" 2>&1; then
  cat "$tmp/log"
  exit 1
fi
for f in redis/redis-server.bin nginx/nginx.bin; do
  if [ -L "$tmp/deps/$f" ] || [ ! -f "$tmp/deps/$f" ]; then
    echo "gpu-deps.sh left $f as $(ls -l "$tmp/deps/$f" 2>&1): not the server's file"
    exit 1
  fi
done
export KJIT_REDIS_SERVER=$tmp/deps/redis/redis-server KJIT_NGINX=$tmp/deps/nginx/nginx
for tc in "a value written through the tier comes back checked and an absent key is a miss" \
          "a value PUT to nginx comes back whole over one kept connection and an absent name is a 404 miss"; do
  if ! out=$("$tests" -tc="$tc" 2>&1); then
    echo "$out"
    exit 1
  fi
  case "$out" in
    *"[kjit-skip]"*|*"test cases: 0 "*) echo "$out"; echo "skipped or not run with the carried servers: $tc"; exit 1 ;;
  esac
  echo "ran with the carried servers: $tc"
done
