#!/usr/bin/env bash
# The model and its twin probe in turns at one point, each run's PS link captured at both of its
# ends (the PS and the first two workers) for a while inside its settled window
# (benchmarks/upload_bursts.py reads the captures):
#
#     benchmarks/captured_turns.sh ROOT ENV POINT WORKERS K PROBE_MODEL OUT
#
# Each run is validate's window (60 s after 20 s of settling); the capture starts AT seconds
# (default 35) after the run's PS namespace appears and lasts FOR seconds (default 30), headers
# only (96 bytes a packet, written to a file: a few hundredths of a core at 25mbit). Writes
# OUT/{tf,probe}-K-{ps,w0,w1}.pcap (what each end of the link saw), OUT/{tf,probe}-K.{json,log}
# and OUT/summary.log. Each run takes /tmp/tfsim-tf.lock.
set -euo pipefail
ROOT=${1:?usage: captured_turns.sh ROOT ENV POINT WORKERS K PROBE_MODEL OUT}; ENV=${2:?}; POINT=${3:?}
W=${4:?}; K=${5:?}; PROBE_MODEL=${6:?}; OUT=${7:?}
AT=${AT:-35}; FOR=${FOR:-30}
P=$ROOT/$ENV/$POINT
MODEL=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['model'])" "$P/measured/measured.json")
LINK=(--workers "$W" --bandwidth "${POINT##*-}" --queue "${ENV##*-}" --tcp-congestion-control "${ENV%-*}"
      --duration 60 --settle 20 --repeats 1)
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
    sleep "$AT"
    for role in ps w0 w1; do
        ip netns list | grep -q "^$prefix-$role" || continue
        ip netns exec "$prefix-$role" timeout "$FOR" tcpdump -q -i eth0 -s 96 -B 16384 -w "$1-$role.pcap" \
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
        capture "$OUT/$side-$k" &
        cap=$!
        tracetool measure --model "$model" --batch-size $batch "${LINK[@]}" --out "$WORK/$side-$k" \
            > "$OUT/$side-$k.log" 2>&1
        wait $cap
        flock -u 9
        cp "$WORK/$side-$k/measured.json" "$OUT/$side-$k.json"
        echo "$ENV $POINT $W $side $k $(grep -o '^[0-9]* worker(s): [0-9.]* steps/s' "$OUT/$side-$k.log" | tail -1)" \
            | tee -a "$OUT/summary.log"
    done
done
