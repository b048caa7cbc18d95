"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
11.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    40, 1048576, 256, 10240, 384, 204800, 1024, 331776, 0, 0,
    262144, 0, 128, 1024, 384, 221184, 0, 9600, 256, 221184,
    0,
]
COMPUTE_S = 0.011604258246519117


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
