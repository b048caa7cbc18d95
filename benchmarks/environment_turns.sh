#!/usr/bin/env bash
# Validate campaign points again with validate's defaults of today: 60-second windows opening
# 20 s after the last worker is warm, the model's runs and its TensorFlow probe's taking turns,
# more runs of both where either's runs, or their two means, disagree. validate profiles the model
# afresh, as its defaults do (a few seconds), so that the table is what a user's validate gives.
# (Profiled afresh, inception and resnet at 50mbit predicted their lone workers as their graphs
# from days before did, to 0.3%: the lone workers' +6.2% and +4.6% there are not the graphs' age.)
# PROFILE=reuse replays the point's own step graph instead, so that only the runs are new, except
# where that graph was profiled on another CPU than this machine's (its own cpu_model, or else the
# point's first measurement's): a step graph from one CPU does not predict runs on another
# (resnet's compute doubled from an Intel Xeon to an AMD EPYC).
#
#     benchmarks/environment_turns.sh ROOT ENV/POINT [ENV/POINT ...]
#
# e.g. ``environment_turns.sh benchmarks/results/environments cubic-100ms/resnet-50mbit``
# writes ROOT/cubic-100ms/resnet-50mbit/settled/ (and settled.log); FOLDER=name writes
# ROOT/.../name/ instead. The points' turns/ folders were written the same way with the defaults
# before (20-second windows opening 2 s after warm-up). Finished points are skipped; every run
# takes the lock /tmp/tfsim-tf.lock, and no new point starts while ROOT/STOP exists.
set -uo pipefail

ROOT=${1:?usage: environment_turns.sh ROOT ENV/POINT [ENV/POINT ...]}
shift
TRACETOOL=${TRACETOOL:-tracetool}
FOLDER=${FOLDER:-settled}
PROFILE=${PROFILE:-fresh}
for target in "$@"; do
    env=${target%%/*}
    point=${target#*/}
    cc=${env%-*}
    queue=${env##*-}
    model=${point%-*}
    bandwidth=${point##*-}
    dir="$ROOT/$env/$point"
    if [ -s "$dir/$FOLDER/validation.json" ]; then
        continue
    fi
    if [ -e "$ROOT/STOP" ]; then
        echo "$(date -u +%H:%M:%S) stopped before $env $point ($ROOT/STOP exists)"
        break
    fi
    profile=()
    if [ "$PROFILE" = reuse ] && python3 "$(dirname "$0")/profiled_here.py" "$dir/graph.json" "$dir/measured/measured.json"; then
        profile=(--from-profile "$dir/graph.json")
    fi
    echo "$(date -u +%H:%M:%S) validate $env $point into $FOLDER/ (${profile[*]:-profiling on this CPU})"
    flock /tmp/tfsim-tf.lock "$TRACETOOL" validate --model "$model" --bandwidth "$bandwidth" --queue "$queue" \
        --tcp-congestion-control "$cc" --workers 1-4 "${profile[@]}" --out "$dir/$FOLDER" \
        > "$dir/$FOLDER.log" 2>&1 || echo "validate $env $point failed: $(tail -1 "$dir/$FOLDER.log")"
done
echo "$(date -u +%H:%M:%S) done"
