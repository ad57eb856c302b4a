#!/usr/bin/env bash
# Developer helper: copies the Debian 12 headers, static libraries and CMake package files kjit
# builds with into .gpu/deps (ignored by git), so that scripts/gpu-devices.sh can build kjit on a
# lent GPU machine that has none of them; plus redis-server and the libraries it needs beside
# Debian's (.gpu/deps/redis) for the Redis tests there. Run scripts/install-deps.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
d=.gpu/deps
rm -rf "$d" && mkdir -p "$d/include" "$d/lib/x86_64-linux-gnu/cmake" "$d/lib/cmake" "$d/share/cmake" "$d/redis"
# Debian's own layout under one prefix: the package files find their files relative to themselves.
for h in CLI dlpack doctest dtl fmt hiredis nlohmann sodium sodium.h xxhash.h; do cp -a "/usr/include/$h" "$d/include/"; done
cp -a /usr/lib/x86_64-linux-gnu/{libhiredis.a,libsodium.a} /usr/lib/x86_64-linux-gnu/libfmt.so* "$d/lib/x86_64-linux-gnu/"
cp -a /usr/lib/x86_64-linux-gnu/{libhiredis.a,libsodium.a} "$d/lib/"
cp -a /usr/lib/x86_64-linux-gnu/cmake/fmt "$d/lib/x86_64-linux-gnu/cmake/"
cp -a /usr/lib/cmake/doctest "$d/lib/cmake/"
cp -a /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$d/share/cmake/"
cp -a /usr/bin/redis-server "$d/redis/"
for l in liblzf.so.1 libjemalloc.so.2; do cp -aL "/lib/x86_64-linux-gnu/$l" "$d/redis/"; done
du -sh "$d"
# doctest's targets file names /usr itself.
sed -i 's|set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
  "$d/lib/cmake/doctest/doctestTargets.cmake"
