#!/bin/bash
# usage: bash .gpu/run1.sh SECONDS -- ICEWS14 extrapolation at paper scale alone on the GPU (resumes)
T=${1:-500}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=8 TPAR_DATA_DIR=$PWD/.gpu/data
cd .gpu/runs; X=../data/extrapolation; C=../../tpar/configs
echo "== $(date +%T) i14x resume alone" >> i14x.log
timeout -s TERM $T python3 -m tpar train --device cuda --out i14x.tpar --data $X/ICEWS14 --setting extrapolation --config $C/paper/icews14-extrapolation.json --epochs 60 --patience 6 --max-train-queries 30000 --max-valid-queries 3000 --resume >> i14x.log 2>&1
tar czf $OUT/x.tgz i14x.*; tail -c 3000 i14x.log | tr '\r' '\n' | grep -a "valid MRR\|qps" | tail -3
