#!/bin/bash
# usage: bash .gpu/run.sh SECONDS [resume]  -- the issue-12 trainings, concurrently on one GPU
T=${1:-500}; RES=${2:-}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=3 TPAR_DATA_DIR=$PWD/.gpu/data
mkdir -p .gpu/runs; cd .gpu/runs
( date; nvidia-smi -L; python3 -c "import torch;print(torch.__version__, torch.cuda.get_device_name(0))"; nproc ) >> device.txt 2>&1
I=../data/interpolation; X=../data/extrapolation; C=../../tpar/configs; K=../../checkpoints
tr() { name=$1; init=$2; shift 2
  if [ -n "$RES" ] && [ -f $name.tpar.resume ]; then start="--resume"; elif [ -n "$init" ]; then start="--init $init"; else start=""; fi
  echo "== $(date +%T) $name $* $start" >> $name.log
  timeout -s TERM $T python3 -m tpar train --device cuda --out $name.tpar "$@" $start >> $name.log 2>&1 &
}
tr i14i $K/icews14-interpolation.tpar --data $I/ICEWS14 --setting interpolation --epochs 40 --patience 5
tr i14u $K/icews14-interpolation.tpar --data $I/ICEWS14 --setting unified --epochs 40 --patience 5 --max-train-queries 40000
tr i14x "" --data $X/ICEWS14 --setting extrapolation --config $C/paper/icews14-extrapolation.json --epochs 60 --patience 6 --max-train-queries 30000 --max-valid-queries 3000
tr y11i "" --data $I/YAGO11k --setting interpolation --config $C/paper/yago11k-interpolation.json --epochs 80 --patience 8 --max-valid-queries 3000
tr yagx "" --data $X/YAGO --setting extrapolation --config $C/paper/yago-extrapolation.json --epochs 60 --patience 6 --max-train-queries 30000 --max-valid-queries 3000
( cd ../.. && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/model/test_model.py -k "cuda or pruned_forward" >> .gpu/runs/cuda-tests.log 2>&1 )
sleep 5; nvidia-smi >> nvidia-smi.txt 2>&1
wait
