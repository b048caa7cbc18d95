"""TensorFlow link probe of alexnet's step: 21 tensors, 2,313,000 B each way,
12.0 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    1048576, 0, 256, 40, 256, 204800, 10240, 221184, 0, 1024,
    384, 221184, 262144, 331776, 1024, 0, 128, 384, 0, 9600,
    0,
]
COMPUTE_S = 0.012000336735370043


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
