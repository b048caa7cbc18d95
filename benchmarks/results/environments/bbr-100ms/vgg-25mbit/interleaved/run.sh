#!/bin/bash
# TensorFlow's vgg and its TensorFlow probe, two workers on the BBR 25mbit link behind 100 ms,
# three runs each, interleaved (a day after the campaign measured the point): OUT/{tf,probe}-K.
P=benchmarks/results/environments/bbr-100ms/vgg-25mbit
PM=$(ls $P/tf-probe*/probe_model.py | head -1)
OUT=${OUT:-/tmp/ab}
TRACETOOL=${TRACETOOL:-tracetool}
L="--workers 2 --bandwidth 25mbit --queue 100ms --tcp-congestion-control bbr --duration 20 --repeats 1"
for k in 1 2 3; do
  flock /tmp/tfsim-tf.lock $TRACETOOL measure --model vgg --batch-size 32 $L --out $OUT/tf-$k > $OUT/tf-$k.log 2>&1
  echo "tf $k $(tail -2 $OUT/tf-$k.log | head -1)"
  flock /tmp/tfsim-tf.lock $TRACETOOL measure --model $PM --batch-size 1 $L --out $OUT/probe-$k > $OUT/probe-$k.log 2>&1
  echo "probe $k $(tail -2 $OUT/probe-$k.log | head -1)"
done
