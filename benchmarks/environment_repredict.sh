#!/usr/bin/env bash
# Re-predict every finished point of an environment campaign with the checkout's replay, reusing
# its profile, measurement and link probe (no TensorFlow runs):
#
#     benchmarks/environment_repredict.sh ROOT [NAME [--probe] [ENV/POINT ...]]
#
# writes ROOT/ENV/POINT/NAME/ (default "repredicted"): validation.json and the predictions beside
# it. benchmarks/environment_table.py reads them as the variant "now". With --probe the link is
# probed again with the step shape the checkout gives (no TensorFlow either, about a minute per
# point), instead of reusing the point's link-probe.json; then NAME/link-probe.json is the new
# probe, which later runs may reuse with --from-link-probe. ENV/POINT names restrict the points.
# LINK_PROBE=reprobed/link-probe.json reuses that probe of each point (a path below the point)
# instead of the campaign's own link-probe.json; MEASURED=more-runs/measured.json likewise replaces
# the point's measured/measured.json (benchmarks/environment_more_runs.py). PROBE_REPEATS=R sets validate's --probe-repeats;
# VALIDATE_ARGS=... adds options to validate (e.g. "--probe-transport grpc --probe-duration 20").
# Takes the lock /tmp/tfsim-tf.lock once for all points, so a running campaign waits rather than
# being disturbed. A point whose profile folder is not kept (the repository keeps none) is
# re-predicted from the step graph its validation saved (graph.json), which gives the same graph.
set -uo pipefail
ROOT=${1:?usage: environment_repredict.sh ROOT [NAME [--probe] [ENV/POINT ...]]}
NAME=${2:-repredicted}
PROBE=""
if [ "${3:-}" = --probe ]; then PROBE=1; shift; fi
shift 2 2>/dev/null || shift $#
ONLY="$*"
TRACETOOL=${TRACETOOL:-tracetool}
LINK_PROBE=${LINK_PROBE:-link-probe.json}
MEASURED=${MEASURED:-measured/measured.json}
PROBE_REPEATS=${PROBE_REPEATS:-}
VALIDATE_ARGS=${VALIDATE_ARGS:-}
export ROOT NAME TRACETOOL PROBE ONLY LINK_PROBE MEASURED PROBE_REPEATS VALIDATE_ARGS
flock /tmp/tfsim-tf.lock bash -c '
for point in "$ROOT"/*/*/validation.json; do
    dir=$(dirname "$point")
    env=$(basename "$(dirname "$dir")")
    [ "$env" = probes ] && continue
    if [ -n "$ONLY" ] && [[ " $ONLY " != *" $env/$(basename "$dir") "* ]]; then continue; fi
    reuse=(--from-link-probe "$dir/$LINK_PROBE")
    [ -n "$PROBE" ] && reuse=(${PROBE_REPEATS:+--probe-repeats "$PROBE_REPEATS"})
    name=$(basename "$dir")
    model=${name%-*}
    bandwidth=${name##*-}
    cc=${env%-*}
    queue=${env##*-}
    profile="$dir/profile"
    [ -d "$profile" ] || profile="$dir/graph.json"
    "$TRACETOOL" validate --model "$model" --bandwidth "$bandwidth" --queue "$queue" --tcp-congestion-control "$cc" \
        --from-profile "$profile" --from-measured "$dir/$MEASURED" \
        "${reuse[@]}" $VALIDATE_ARGS --out "$dir/$NAME" > "$dir/$NAME.log" 2>&1 \
        || echo "$env $name: $(tail -1 "$dir/$NAME.log")"
    echo "$env $name: $(grep "median" "$dir/$NAME.log")"
done'
