#!/bin/bash
# A fourth lent-GPU stage for issue #29's ICEWS18 row (35.09 so far, the issue asks 35.8), session 24 (2026-11-27).
# One call under the device's 600 s per command: two longer continuations at once on the one GPU, each the best of
# its lineage, with new training seeds (so new questions of the 746,000-question epoch):
#   P6: the L=5 member $L5 (default runs/icews18-gpu3/i18-l5d.tpar, valid 35.16) at lr 2e-4, training seed 21,
#       3 epochs of 130,000 questions (1.6x the 240,000 questions of its last stage);
#   P7: the L=3 member $L3 (default runs/icews18-gpu/i18g2.tpar, the composite's other lineage) at lr 2e-4, training
#       seed 23, 3 epochs of 170,000 questions.
# Each is selected on 5,000 valid questions of its training seed (its best epoch is kept when the SIGTERM deadline
# $STOP stops it, marked unfinished). The composite is chosen on the CPU afterwards (`tpar ensemble --prior
# --weights`, CPU-bound: session 23) and tested there; runs/icews18-gpu4/README.md holds the shipping rule, written
# before any test figure is read: ship as checkpoints/icews18-extrapolation.tpar only at a test MRR of 35.8 or more.
#
# Expects .gpu/data/extrapolation/ICEWS18 (ignored: a copy of ../shared/datasets/extrapolation/ICEWS18; carry .gpu).
# Models and logs are written straight to $OUT (at most 4 files). SMOKE=1: the same steps on the CPU, tiny budgets.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 TPAR_DATA_DIR="$PWD/.gpu/data" TPAR_KERNEL=${TPAR_KERNEL:-torch}
D="$PWD/.gpu/data/extrapolation"; OUT=${OUT:-$PWD/.gpu/runs24/out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
L5=${L5:-runs/icews18-gpu3/i18-l5d.tpar}; L3=${L3:-runs/icews18-gpu/i18g2.tpar}
T0=$(date +%s); el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
left() { local s=$(( $1 - ($(date +%s) - T0) )); [ $s -lt 5 ] && s=5; echo $s; }  # seconds until mark $1
for f in "$L5" "$L3" "$D/ICEWS18/train.txt"; do [ -e "$f" ] || { echo "missing $f"; exit 2; }; done
if [ "${SMOKE:-0}" = 1 ]; then
    DEV=cpu; TH=1; STOP=${STOP:-240}
    Q6="--epochs 1 --max-train-queries 20 --max-valid-queries 30"; Q7=$Q6
else
    DEV=cuda; TH=4; STOP=${STOP:-530}
    Q6="--epochs 3 --max-train-queries 130000 --max-valid-queries 5000"
    Q7="--epochs 3 --max-train-queries 170000 --max-valid-queries 5000"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
fi
export OMP_NUM_THREADS=$TH
clean() { tr '\r' '\n' < "$1" | grep -a -v "q/s\|it/s\|^ *$" | tail -${2:-8}; }
TRAIN="python3 -m tpar train --device $DEV --threads $TH --quiet --setting extrapolation --lr-schedule cosine \
    --data $D/ICEWS18 --batch-size 64 --micro-batch 64 --patience 4 --lr 2e-4"
el "training P6 and P7 at once (SIGTERM at ${STOP} s)"
timeout -s TERM -k 20 $(left $STOP) $TRAIN --init "$L5" --train-seed 21 $Q6 --out "$OUT/i18-l5f.tpar" \
    > "$OUT/i18-l5f.log" 2>&1 &
timeout -s TERM -k 20 $(left $STOP) $TRAIN --init "$L3" --train-seed 23 $Q7 --out "$OUT/i18-l3g.tpar" \
    > "$OUT/i18-l3g.log" 2>&1 &
wait
rm -f "$OUT"/*.resume "$OUT"/*.lock  # a run stopped at the deadline keeps its best epoch
for f in i18-l5f i18-l3g; do echo "-- $f"; clean "$OUT/$f.log"; done
ls -la "$OUT"
el "done"
