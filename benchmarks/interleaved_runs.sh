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
# DURATION=60 SETTLE=20. CAPTURE=1 captures each run's link for FOR seconds (default 30) from AT
# seconds (default 35) after its PS namespace appears, headers only, at the PS and the first two
# workers (OUT/{tf,probe}-runK-{ps,w0,w1}.pcap; benchmarks/upload_bursts.py reads them; a few
# hundredths of a core at 25mbit).
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
capture() {  # waits for the run's PS namespace, then captures eth0 there and in the first two workers'
    local ns="" prefix role
    for _ in $(seq 1 600); do
        ns=$(ip netns list | awk '/^tfsim-[0-9]+-ps/ {print $1; exit}')
        [ -n "$ns" ] && break
        sleep 0.1
    done
    [ -n "$ns" ] || return 0
    prefix=${ns%-ps}
    sleep "${AT:-35}"
    for role in ps w0 w1; do
        ip netns list | grep -q "^$prefix-$role" || continue
        ip netns exec "$prefix-$role" timeout "${FOR:-30}" tcpdump -q -i eth0 -s 96 -B 16384 -w "$1-$role.pcap" \
            2> "$1-$role.log" &
    done
    wait
}
for k in $(seq 1 "$K"); do
    for side in tf probe; do
        model=$MODEL batch=32
        [ $side = probe ] && model=$PROBE_MODEL batch=1
        exec 9> /tmp/tfsim-tf.lock
        flock 9
        cap=""
        if [ "${CAPTURE:-0}" = 1 ]; then
            capture "$OUT/$side-run$k" &
            cap=$!
        fi
        "$TRACETOOL" measure --model "$model" --batch-size $batch "${LINK[@]}" \
            --out "$WORK/$side-$k" > "$WORK/$side-$k.log" 2>&1
        [ -z "$cap" ] || wait "$cap"
        flock -u 9
        cp "$WORK/$side-$k/measured.json" "$OUT/$side-run$k.json"
        echo "$ENV $POINT $W $side $k $(grep -o '^[0-9]* worker(s): [0-9.]* steps/s' "$WORK/$side-$k.log" | tail -1)" \
            | tee -a "$OUT/summary.log"
    done
done
