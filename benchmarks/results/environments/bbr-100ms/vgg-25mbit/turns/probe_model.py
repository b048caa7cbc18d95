"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
12.1 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    1024, 40, 262144, 0, 1024, 0, 20736, 1572864, 82944, 0,
    384, 0, 96, 331776, 192, 41472, 0, 2592, 384, 0,
    165888, 192, 96, 10240,
]
COMPUTE_S = 0.012130481015177663


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
