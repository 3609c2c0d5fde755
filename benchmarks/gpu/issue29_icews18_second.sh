#!/bin/bash
# The second lent-GPU call of 2026-11-27 (issue #29, ICEWS18), about 5 minutes: two trainings at once --
#   P2b: the L=5 ICEWS18 model of the first call (benchmarks/gpu/issue28_29_members.sh; valid 34.51, rising)
#        trained on at a lower learning rate;
#   P3:  fine-tuned, in the sparse default, from the exact-trained L=3 ICEWS14 model (git show
#        a9b2ef0:checkpoints/icews14-extrapolation.tpar, copied to .gpu/exact14.tpar: the first call's P3 named an
#        untracked file that did not travel);
# then each one's test figure. Expects .gpu/{data,exact14.tpar,i18-l5.tpar} (ignored, carried); models to $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TPAR_DATA_DIR=$PWD/.gpu/data TPAR_KERNEL=torch OMP_NUM_THREADS=6
D=$PWD/.gpu/data/extrapolation; R=$PWD/.gpu/runs20b; mkdir -p $R; OUT=${OUT:-$R/out}; mkdir -p $OUT
T0=$(date +%s); el() { echo "== $(( $(date +%s) - T0 )) s: $*"; }
left() { local s=$(( $1 - ($(date +%s) - T0) )); [ $s -lt 5 ] && s=5; echo $s; }
STOP=${STOP:-235}; TESTS_END=${TESTS_END:-330}
TRAIN="python3 -m tpar train --device cuda --threads 6 --quiet --setting extrapolation --lr-schedule cosine --data $D/ICEWS18 --batch-size 64 --micro-batch 64 --max-valid-queries 5000 --train-seed 2"
el "training P2b and P3 at once (stopped at ${STOP} s)"
timeout -s TERM -k 20 $(left $STOP) $TRAIN --init .gpu/i18-l5.tpar --lr 4e-4 --epochs 3 --patience 3 \
    --max-train-queries 80000 --out $OUT/i18-l5b.tpar > $R/i18-l5b.log 2>&1 &
timeout -s TERM -k 20 $(left $STOP) $TRAIN --init .gpu/exact14.tpar --propagation sparse --lr 7e-4 --epochs 3 \
    --patience 3 --max-train-queries 100000 --out $OUT/i18-l3x.tpar > $R/i18-l3x.log 2>&1 &
wait
for f in i18-l5b i18-l3x; do echo "-- $f"; tr '\r' '\n' < $R/$f.log | grep -a -v "q/s\|it/s\|^ *$" | tail -7; done
el "tests"
for f in i18-l5b i18-l3x; do
    [ -f $OUT/$f.tpar ] && timeout -k 5 $(left $TESTS_END) python3 -m tpar evaluate --checkpoint $OUT/$f.tpar \
        --data $D/ICEWS18 --split test --device cuda --threads 6 --micro-batch 64 --quiet --max-queries 0 \
        --json $R/$f-test.json > $R/$f-test.log 2>&1 &
done
wait
for f in i18-l5b i18-l3x; do
    [ -f $R/$f-test.json ] && python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], m['num_queries'], 'questions', m['seconds'], 's, realistic', m['realistic'])" $R/$f-test.json
done
(cd $R && tar czf $OUT/logs2.tar.gz *.log *.json 2>/dev/null); ls -la $OUT; el "done"
