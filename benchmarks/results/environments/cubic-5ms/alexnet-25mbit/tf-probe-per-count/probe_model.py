"""TensorFlow link probe of alexnet's step: 21 tensors, 2,313,000 B each way,
11.7 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    204800, 0, 1024, 262144, 1024, 384, 1048576, 331776, 0, 40,
    256, 221184, 128, 10240, 221184, 0, 0, 0, 9600, 384,
    256,
]
COMPUTE_S = 0.011685756467830766


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
