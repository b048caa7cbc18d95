#!/usr/bin/env bash
# TensorFlow and its TensorFlow probe, interleaved at one campaign point and worker count, so both
# see the machine and the link at the same hour: K runs each, alternating.
#
#     benchmarks/interleaved_runs.sh ROOT ENV POINT WORKERS K
#
# writes ROOT/ENV/POINT/interleaved-wWORKERS/{tf,probe}-runK.json (each run's measured.json) and
# summary.log. TRACETOOL names the command (default tracetool); each run takes /tmp/tfsim-tf.lock.
# PROBE_MODEL (default the point's first tf-probe*/probe_model.py), DURATION and SETTLE (20 s and
# the default settling) and OUT (the folder) override the defaults; validate's window is
# DURATION=60 SETTLE=20.
set -euo pipefail
ROOT=${1:?usage: interleaved_runs.sh ROOT ENV POINT WORKERS K}; ENV=${2:?}; POINT=${3:?}; W=${4:?}; K=${5:?}
TRACETOOL=${TRACETOOL:-tracetool}
P=$ROOT/$ENV/$POINT
PROBE_MODEL=${PROBE_MODEL:-$(ls "$P"/tf-probe*/probe_model.py | head -1)}
MODEL=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['model'])" "$P/measured/measured.json")
LINK=(--workers "$W" --bandwidth "${POINT##*-}" --queue "${ENV##*-}" --tcp-congestion-control "${ENV%-*}"
      --duration "${DURATION:-20}" ${SETTLE:+--settle "$SETTLE"} --repeats 1)
OUT=${OUT:-$P/interleaved-w$W}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
for k in $(seq 1 "$K"); do
    for side in tf probe; do
        model=$MODEL batch=32
        [ $side = probe ] && model=$PROBE_MODEL batch=1
        flock /tmp/tfsim-tf.lock "$TRACETOOL" measure --model "$model" --batch-size $batch "${LINK[@]}" \
            --out "$WORK/$side-$k" > "$WORK/$side-$k.log" 2>&1
        cp "$WORK/$side-$k/measured.json" "$OUT/$side-run$k.json"
        echo "$ENV $POINT $W $side $k $(grep -o '^[0-9]* worker(s): [0-9.]* steps/s' "$WORK/$side-$k.log" | tail -1)" \
            | tee -a "$OUT/summary.log"
    done
done
