#!/bin/bash
# ab2.sh N BASE_LIB_DIR NEW_LIB_DIR EXPHIT HITCHILD : interleaves raw / base / new in fresh processes
N=$1; A=$2; B=$3; EXP=$4; HC=$5
out=$(EXP_KEEP=1 EXP_MODES=raw $EXP 1 | grep kept | awk '{print $2}')
export KJIT_CACHE_DIR=$out/cache
$HC >/dev/null 2>&1  # one hit to settle the entry's last use
for i in $(seq $N); do
  echo "raw $($EXP --child raw $out/a.cubin)"
  echo "base $(LD_LIBRARY_PATH=$A $HC)"
  echo "new $(LD_LIBRARY_PATH=$B $HC)"
done | python3 -c '
import sys,statistics as s
d={}
for l in sys.stdin:
  p=l.split()
  if len(p)<3: continue
  d.setdefault(p[0],[]).append((float(p[1]),int(p[2])))
raw=s.median(t for t,_ in d["raw"])
for k in ["raw","base","new"]: print(k, "median %.1f us" % s.median(t for t,_ in d[k]), "x%.2f" % (s.median(t for t,_ in d[k])/raw), "faults", s.median(f for _,f in d[k]))'
rm -rf $out
