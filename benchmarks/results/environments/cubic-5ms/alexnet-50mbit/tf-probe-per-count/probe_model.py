"""TensorFlow link probe of alexnet's step: 21 tensors, 2,313,000 B each way,
11.0 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    221184, 0, 1048576, 0, 256, 331776, 0, 256, 384, 0,
    204800, 40, 0, 10240, 1024, 384, 128, 262144, 221184, 9600,
    1024,
]
COMPUTE_S = 0.011022004713230005


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
