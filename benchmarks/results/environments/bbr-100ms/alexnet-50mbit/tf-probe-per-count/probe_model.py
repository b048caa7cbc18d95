"""TensorFlow link probe of alexnet's step: 21 tensors, 2,313,000 B each way,
11.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    0, 1024, 256, 1048576, 384, 40, 256, 204800, 10240, 0,
    0, 1024, 384, 221184, 262144, 331776, 128, 0, 0, 9600,
    221184,
]
COMPUTE_S = 0.01163972013808734


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
