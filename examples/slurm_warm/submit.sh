#!/bin/bash
# Submits the warm as a Slurm array of N tasks (default 16) and the merge after it:
#   KERNELS=$PWD/kernels ARCHS=sm_80,sm_90 [OUT=$PWD/bundles] examples/slurm_warm/submit.sh 16
# The merged bundle is $OUT/warm.kjb once both jobs are done (squeue shows them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-16}
: "${KERNELS:?set KERNELS to the folder holding the kjit.json}"
export KERNELS ARCHS=${ARCHS:-sm_90} OUT=${OUT:-$PWD/kjit-bundles-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
array=$(sbatch --parsable --array=0-$((n - 1)) --export=ALL "$here/warm_array.sbatch")
merge=$(sbatch --parsable --dependency=afterok:"${array%%;*}" --export=ALL "$here/merge.sbatch")
echo "warm: array job $array ($n tasks), merge: job $merge; the bundle: $OUT/warm.kjb"
