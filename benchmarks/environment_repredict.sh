#!/usr/bin/env bash
# Re-predict every finished point of an environment campaign with the checkout's replay, reusing
# its profile, measurement and link probe (no TensorFlow runs):
#
#     benchmarks/environment_repredict.sh ROOT [NAME]
#
# writes ROOT/ENV/POINT/NAME/ (default "repredicted"): validation.json and the predictions beside
# it. benchmarks/environment_table.py reads them as the variant "now". Takes the lock
# /tmp/tfsim-tf.lock once for all points, so a running campaign waits rather than being disturbed.
set -uo pipefail
ROOT=${1:?usage: environment_repredict.sh ROOT [NAME]}
NAME=${2:-repredicted}
TRACETOOL=${TRACETOOL:-tracetool}
export ROOT NAME TRACETOOL
flock /tmp/tfsim-tf.lock bash -c '
for point in "$ROOT"/*/*/validation.json; do
    dir=$(dirname "$point")
    env=$(basename "$(dirname "$dir")")
    [ "$env" = probes ] && continue
    name=$(basename "$dir")
    model=${name%-*}
    bandwidth=${name##*-}
    cc=${env%-*}
    queue=${env##*-}
    "$TRACETOOL" validate --model "$model" --bandwidth "$bandwidth" --queue "$queue" --tcp-congestion-control "$cc" \
        --from-profile "$dir/profile" --from-measured "$dir/measured/measured.json" \
        --from-link-probe "$dir/link-probe.json" --out "$dir/$NAME" > "$dir/$NAME.log" 2>&1 \
        || echo "$env $name: $(tail -1 "$dir/$NAME.log")"
    echo "$env $name: $(grep "median" "$dir/$NAME.log")"
done'
