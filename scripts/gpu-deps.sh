#!/usr/bin/env bash
# Developer helper: copies the Debian 12 headers, static libraries and CMake package files kjit
# builds with into .gpu/deps (ignored by git), so that scripts/gpu-devices.sh can build kjit on a
# lent GPU machine that has none of them; plus redis-server and nginx (the files themselves, never
# Debian's links: /usr/bin/redis-server is a link to redis-check-rdb) with the libraries they need
# beside the machine's (.gpu/deps/redis, .gpu/deps/nginx), which scripts/gpu-devices.sh hands to the
# Redis and HTTP tests and bench_remote (KJIT_REDIS_SERVER, KJIT_NGINX). Run scripts/install-deps.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
d=${GPU_DEPS_DIR:-.gpu/deps}  # GPU_DEPS_DIR: elsewhere (an absolute path; tests/check_gpu_deps.sh)
rm -rf "$d" && mkdir -p "$d/include" "$d/lib/x86_64-linux-gnu/cmake" "$d/lib/cmake" "$d/share/cmake" "$d/redis" "$d/nginx"
# Debian's own layout under one prefix: the package files find their files relative to themselves.
for h in CLI dlpack doctest dtl fmt hiredis nlohmann sodium sodium.h xxhash.h; do cp -a "/usr/include/$h" "$d/include/"; done
cp -a /usr/lib/x86_64-linux-gnu/{libhiredis.a,libsodium.a} /usr/lib/x86_64-linux-gnu/libfmt.so* "$d/lib/x86_64-linux-gnu/"
cp -a /usr/lib/x86_64-linux-gnu/{libhiredis.a,libsodium.a} "$d/lib/"
cp -a /usr/lib/x86_64-linux-gnu/cmake/fmt "$d/lib/x86_64-linux-gnu/cmake/"
cp -a /usr/lib/cmake/doctest "$d/lib/cmake/"
cp -a /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$d/share/cmake/"
# The servers: each binary's file (cp -L), run by a wrapper that finds its libraries beside it. Redis
# picks its mode from argv[0]: the file is redis-server.bin (no "redis-check" in it), a server.
cp -L "$(command -v redis-server)" "$d/redis/redis-server.bin"
for l in liblzf.so.1 libjemalloc.so.2 libatomic.so.1; do cp -L "/lib/x86_64-linux-gnu/$l" "$d/redis/"; done
cp -L /usr/sbin/nginx "$d/nginx/nginx.bin"  # nginx-light: WebDAV built in, no module to load
for l in libpcre2-8.so.0 libcrypt.so.1; do cp -L "/lib/x86_64-linux-gnu/$l" "$d/nginx/"; done
for s in redis/redis-server nginx/nginx; do
  printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/%s.bin" "$@"\n' \
    "$(basename "$s")" > "$d/$s"
  chmod +x "$d/$s"
done
for s in redis/redis-server nginx/nginx; do
  [ -f "$d/$s.bin" ] && ! [ -L "$d/$s.bin" ] || { echo "gpu-deps: $d/$s.bin is not a file" >&2; exit 1; }
done
"$d/redis/redis-server" --version && "$d/nginx/nginx" -v
du -sh "$d"
# doctest's targets file names /usr itself.
sed -i 's|set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
  "$d/lib/cmake/doctest/doctestTargets.cmake"
