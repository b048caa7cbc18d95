"""TensorFlow link probe of vgg's step: 24 tensors, 2,494,088 B each way,
11.8 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    10240, 1024, 192, 96, 1572864, 41472, 2592, 384, 192, 0,
    384, 0, 40, 331776, 165888, 0, 0, 96, 82944, 20736,
    0, 0, 1024, 262144,
]
COMPUTE_S = 0.011805090165850851


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
