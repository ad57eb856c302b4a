#!/bin/sh
# ctest build/libkjit_tools_of_another_release_fails_to_load: with this release's libkjit on the
# loader's path, a libkjit_tools built against libkjit of another release is refused (the KJIT_PRIVATE
# node it needs is not there), and the same built against this release loads, as the real one does.
#   check.sh LOAD OTHER_TOOLS THIS_TOOLS REAL_TOOLS OTHER_VERSION
load=$1 other=$2 this=$3 real=$4 version=$5
out=$("$load" "$other"); rc=$?
echo "$out"
if [ $rc -ne 1 ] || ! echo "$out" | grep -q "version \`KJIT_PRIVATE_$version' not found"; then
  echo "FAIL: a libkjit_tools of release $version loaded, or was refused for another reason (exit $rc)"
  exit 1
fi
for lib in "$this" "$real"; do
  out=$("$load" "$lib"); rc=$?
  echo "$out"
  [ $rc -eq 0 ] || { echo "FAIL: $lib, of this release, did not load"; exit 1; }
done
echo "refused: a libkjit_tools of release $version; loaded: this release's"
