#!/bin/bash
# One lent-GPU call (2026-11-26) for issues #28 and #29, about 8.5 minutes:
#   1. the CUDA path against the CPU for every propagation option, scores and gradients (tests/model -k cuda);
#   2. batched propagation: training and inference questions/s at growing batch sizes (benchmarks/gpu/batching.py);
#   3. ICEWS18: a large-batch fine-tune stage on the GPU (batch 64, lr scaled by sqrt(6.4) from the CPU stage's
#      2e-4), selected on the same 5,000 seeded valid questions as the CPU stage (training seed 2), then test.
# Expects the data sets copied to .gpu/data/extrapolation/{ICEWS14,ICEWS18} (an ignored folder, carried);
# writes to .gpu/runs and $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=8 TPAR_DATA_DIR=$PWD/.gpu/data TPAR_KERNEL=torch
D=$PWD/.gpu/data/extrapolation; R=$PWD/.gpu/runs; mkdir -p $R
T0=$(date +%s); el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
el "1. CUDA tests"
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/model/test_model.py -k cuda 2>&1 | tail -6
el "2. batching bench"
timeout 170 python3 benchmarks/gpu/batching.py --data-dir $PWD/.gpu/data --device cuda --threads 8 \
    --out $OUT/batching.json --budget 120 2>&1 | grep -v "^bench "
el "3. ICEWS18 large-batch fine-tune"
timeout -s TERM 170 python3 -m tpar train --device cuda --threads 8 --quiet --data $D/ICEWS18 --setting extrapolation \
    --init runs/icews18-ft/icews18-ft.tpar --lr 5e-4 --lr-schedule cosine --batch-size 64 --micro-batch 64 \
    --epochs 3 --patience 2 --max-train-queries 60000 --max-valid-queries 5000 --train-seed 2 \
    --out $R/i18g.tpar > $R/i18g.log 2>&1
tail -c 1500 $R/i18g.log | tr '\r' '\n' | grep -a -v "^ *$" | tail -8
el "4. ICEWS18 test of the best epoch"
[ -f $R/i18g.tpar ] && timeout 80 python3 -m tpar evaluate --checkpoint $R/i18g.tpar --data $D/ICEWS18 --split test \
    --device cuda --micro-batch 64 --quiet --json $OUT/i18g-test.json 2>&1 | tail -6
el "done"
cp $R/i18g.tpar $R/i18g.log $OUT/ 2>/dev/null; cp $R/i18g.tpar.resume $OUT/ 2>/dev/null; true
