"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
11.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    384, 165888, 41472, 331776, 192, 96, 40, 0, 82944, 2592,
    0, 0, 192, 0, 0, 96, 1024, 262144, 10240, 1024,
    20736, 1572864, 384, 0,
]
COMPUTE_S = 0.011559738099830463


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
