#!/usr/bin/env bash
# Probe every environment and bandwidth of an environment campaign again with the checkout's
# tracetool probe (its link profiles now carry the reference steps' fits), no TensorFlow:
#
#     benchmarks/environment_profiles.sh ROOT [NAME]
#
# writes ROOT/NAME/ENV-BW.json (default NAME: probes-step) for every ENV/MODEL-BW point below
# ROOT, once per environment and bandwidth, skipping profiles already written. About three minutes
# each. benchmarks/environment_table.py predicts every point from them (columns "P", "P2", "P3").
# TRACETOOL=... picks the tracetool to run, PROBE_ARGS=... adds options to it (probes-two:
# PROBE_ARGS="--reference-steps 0.25,0.8"). Takes the lock /tmp/tfsim-tf.lock per probe.
set -uo pipefail
ROOT=${1:?usage: environment_profiles.sh ROOT [NAME]}
NAME=${2:-probes-step}
TRACETOOL=${TRACETOOL:-tracetool}
mkdir -p "$ROOT/$NAME"
for point in "$ROOT"/*/*/validation.json; do
    dir=$(dirname "$point")
    env=$(basename "$(dirname "$dir")")
    [ "$env" = probes ] && continue
    bandwidth=${dir##*-}
    out="$ROOT/$NAME/$env-$bandwidth.json"
    [ -s "$out" ] && continue
    cc=${env%-*}
    queue=${env##*-}
    echo "$(date -u +%H:%M:%S) probe $env $bandwidth"
    flock /tmp/tfsim-tf.lock "$TRACETOOL" probe --bandwidth "$bandwidth" --queue "$queue" \
        --tcp-congestion-control "$cc" ${PROBE_ARGS:-} --out "$out" > "$out.log" 2>&1 \
        || echo "probe $env $bandwidth failed: $(tail -1 "$out.log")"
done
