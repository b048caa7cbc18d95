"""TensorFlow link probe of widedeep's step: 8 tensors, 442,372 B each way,
7.2 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    4, 512, 512, 131072, 1024, 275456, 32768, 1024,
]
COMPUTE_S = 0.007233190230555686


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
