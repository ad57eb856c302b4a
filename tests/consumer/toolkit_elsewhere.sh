#!/bin/sh
# consumer/toolkit_elsewhere: run_consumer.cmake with the CUDA toolkit reachable only at another
# path (consumer/toolkit_elsewhere_programs: programs_elsewhere.cmake, the same way). In a mount namespace of its own, the toolkit kjit was built with is bound at
# <work>/cuda-elsewhere and an empty folder is bound over it (so over /usr/local/cuda too when it
# is that toolkit, or a link to it), which also leaves ldconfig's cache entries for it pointing
# nowhere; the script is given the new place as -DKJIT_CONSUMER_CUDA_ROOT.
#   toolkit_elsewhere.sh WORK TOOLKIT_ROOT CMAKE ARGS...   (ARGS: run_consumer.cmake's -D... -P ...)
work=$1 toolkit=$2 cmake=$3
shift 3
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  echo "[kjit-skip] hiding the toolkit needs root and unshare -m"
  exit 0
fi
real=$(readlink -f "$toolkit")
mkdir -p "$work/cuda-elsewhere" "$work/empty" || exit 1
exec unshare -m -- sh -c '
  work=$1 real=$2 cmake=$3
  shift 3
  mount --make-rprivate / &&
  mount --bind "$real" "$work/cuda-elsewhere" &&
  mount --bind "$work/empty" "$real" || exit 1
  if [ -e /usr/local/cuda/include/cuda.h ] || [ -e "$real/include/cuda.h" ]; then
    echo "the toolkit is still where kjit was built with it"; exit 1
  fi
  PATH=$(printf %s "$PATH" | tr : "\n" | grep -v cuda | paste -sd: -) exec "$cmake" -DKJIT_CONSUMER_CUDA_ROOT="$work/cuda-elsewhere" "$@"
' sh "$work" "$real" "$cmake" "$@"
