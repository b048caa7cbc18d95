#!/usr/bin/env bash
# Validate the zoo in several network environments, each point with validate's defaults.
#
#     benchmarks/environment_campaign.sh ROOT [ENVIRONMENT ...]
#
# An environment is CONGESTIONCONTROL-QUEUE (cubic-5ms, cubic-100ms, bbr-100ms). For every point
# (model and bandwidth) and environment it writes ROOT/ENV/MODEL-BW/ (tracetool validate) and,
# once per environment and bandwidth, ROOT/probes/ENV-BW.json (tracetool probe, the link
# profile benchmarks/environment_table.py re-predicts with). Points are interleaved over the
# environments so that a partial campaign covers every environment for its first models.
# Finished points are skipped, so the script resumes where it stopped; a point whose validate
# failed after its measurement (OUT.kept) is left for a manual rerun. Every TensorFlow run takes
# the lock /tmp/tfsim-tf.lock, so nothing else measuring on this machine runs at the same time,
# and the campaign waits between steps while ROOT/PAUSE exists.
set -uo pipefail

ROOT=${1:?usage: environment_campaign.sh ROOT [ENVIRONMENT ...]}
shift
ENVIRONMENTS=("${@:-cubic-100ms bbr-100ms cubic-5ms}")
read -r -a ENVIRONMENTS <<< "${ENVIRONMENTS[*]}"
POINTS=(alexnet-25mbit vgg-25mbit resnet-25mbit inception-25mbit mlp-100mbit widedeep-10mbit
        alexnet-50mbit vgg-50mbit resnet-50mbit inception-50mbit mlp-200mbit widedeep-25mbit)
TRACETOOL=${TRACETOOL:-tracetool}
LOCK=/tmp/tfsim-tf.lock
mkdir -p "$ROOT/probes"

wait_while_paused() {
    while [ -e "$ROOT/PAUSE" ]; do sleep 20; done
}

for point in "${POINTS[@]}"; do
    model=${point%-*}
    bandwidth=${point##*-}
    for env in "${ENVIRONMENTS[@]}"; do
        cc=${env%-*}
        queue=${env##*-}
        probe="$ROOT/probes/$env-$bandwidth.json"
        if [ ! -s "$probe" ]; then
            wait_while_paused
            echo "$(date -u +%H:%M:%S) probe $env $bandwidth"
            flock "$LOCK" "$TRACETOOL" probe --bandwidth "$bandwidth" --queue "$queue" \
                --tcp-congestion-control "$cc" --out "$probe" || echo "probe $env $bandwidth failed"
        fi
        out="$ROOT/$env/$point"
        if [ -s "$out/validation.json" ] || [ -e "$out.kept" ]; then
            continue
        fi
        wait_while_paused
        mkdir -p "$ROOT/$env"
        echo "$(date -u +%H:%M:%S) validate $env $point"
        flock "$LOCK" "$TRACETOOL" validate --model "$model" --bandwidth "$bandwidth" --queue "$queue" \
            --tcp-congestion-control "$cc" --workers 1-4 --out "$out" > "$out.log" 2>&1 \
            || echo "validate $env $point failed: $(tail -1 "$out.log")"
    done
done
echo "$(date -u +%H:%M:%S) campaign done"
