"""TensorFlow link probe of widedeep's step: 8 tensors, 442,372 B each way,
9.2 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    512, 275456, 131072, 1024, 4, 512, 32768, 1024,
]
COMPUTE_S = 0.00916276569885216


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
