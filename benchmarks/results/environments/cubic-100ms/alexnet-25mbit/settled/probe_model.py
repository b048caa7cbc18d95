"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
11.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    128, 221184, 0, 256, 40, 384, 10240, 221184, 1024, 0,
    9600, 262144, 331776, 204800, 1024, 0, 0, 1048576, 256, 0,
    384,
]
COMPUTE_S = 0.01159808543426788


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
