"""TensorFlow link probe of vgg's step: 24 tensors, 2,494,088 B each way,
11.4 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    384, 384, 0, 331776, 165888, 96, 192, 20736, 82944, 0,
    41472, 40, 10240, 1024, 0, 262144, 0, 96, 1024, 192,
    0, 1572864, 0, 2592,
]
COMPUTE_S = 0.011440260895874688


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
