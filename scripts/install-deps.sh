#!/usr/bin/env bash
# Installs the Debian packages kjit builds with, when any is missing (needs root or sudo).
# python3 and binutils (nm, c++filt) read the walls (tests/check_layers.py, ctest build/layers*);
# python3-distributed (Dask) runs examples/dask_warm's test on a LocalCluster; slurmctld, slurmd,
# slurm-client and munge a one-node Slurm for examples/slurm_warm's (tests/support/slurm_cluster).
# The CUDA toolkit (NVRTC, headers) is expected in /usr/local/cuda or on CUDAToolkit's search path.
set -euo pipefail
packages=(cmake ninja-build g++ libfmt-dev libxxhash-dev doctest-dev libcli11-dev nlohmann-json3-dev libdtl-dev libhiredis-dev libssl-dev libsodium-dev libcurl4-openssl-dev redis-server nginx-light
          python3 binutils python3-dev pybind11-dev libdlpack-dev python3-pytest python3-numpy python3-distributed python3-mypy
          slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
