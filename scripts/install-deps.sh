#!/usr/bin/env bash
# Installs the Debian packages kjit builds with, when any is missing (needs root or sudo).
# python3 and binutils (nm, c++filt) read the walls (tests/check_layers.py, ctest build/layers*);
# python3-distributed (Dask) runs examples/dask_warm's test on a LocalCluster; slurmctld, slurmd,
# slurm-client and munge a one-node Slurm for examples/slurm_warm's (tests/support/slurm_cluster).
# The CUDA toolkit (NVRTC, headers) is expected in /usr/local/cuda or on CUDAToolkit's search path.
# The servers the tests start: redis-server, nginx, and the S3 server s3rver (npm: its pinned lock
# tests/servers/s3rver/package-lock.json, installed with `npm ci` into /opt/kjit-test-servers/s3rver,
# where tests/support/s3_server.cpp finds it) with Debian's s3cmd beside it, and Debian's
# docker-registry for the oci:// bundles. --build-only (the quick start) leaves s3rver out.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake ninja-build g++ libfmt-dev libxxhash-dev doctest-dev libcli11-dev nlohmann-json3-dev libdtl-dev libhiredis-dev libssl-dev libsodium-dev libcurl4-openssl-dev redis-server nginx-light
          python3 binutils python3-dev pybind11-dev libdlpack-dev python3-pytest python3-numpy python3-distributed python3-mypy
          slurmctld slurmd slurm-client munge s3cmd docker-registry)
build_only=0
[ "${1:-}" = "--build-only" ] && build_only=1
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# npm: Debian's nodejs and npm, unless a node with its npm is there already (NodeSource's nodejs
# ships npm and conflicts with Debian's npm package).
if [ "$build_only" -eq 0 ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # The tests start their own registry on a free loopback port: not the package's service on :5000.
  if [[ " ${missing[*]} " == *" docker-registry "* ]] && command -v systemctl >/dev/null 2>&1; then
    $sudo systemctl disable --now docker-registry >/dev/null 2>&1 || true
  fi
fi
[ "$build_only" -eq 1 ] && exit 0
s3rver=/opt/kjit-test-servers/s3rver
if ! cmp -s tests/servers/s3rver/package-lock.json "$s3rver/package-lock.json" || [ ! -d "$s3rver/node_modules" ]; then
  echo "installing s3rver (tests/servers/s3rver) into $s3rver"
  $sudo mkdir -p "$s3rver"
  $sudo cp tests/servers/s3rver/package.json tests/servers/s3rver/package-lock.json "$s3rver/"
  (cd "$s3rver" && $sudo npm ci --omit=dev --no-audit --no-fund --loglevel=error)
fi
