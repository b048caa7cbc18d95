#!/usr/bin/env bash
# Re-profile every zoo model on this machine and rebuild its step graph.
# Usage: bash traces/regenerate.sh [model ...]   (run from the repository root, as root)
set -euo pipefail
models=("${@:-alexnet vgg inception resnet mlp}")
for model in ${models[@]}; do
  tracetool profile --model "$model" --batch-size 32 --steps 3 --warmup 5 --untraced-steps 30 --out "traces/$model" --quiet
  tracetool graph "traces/$model" --out "traces/$model/graph.json"
done
