"""TensorFlow link probe of the step of widedeep: 8 tensors, 442,372 B each way,
7.1 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    275456, 4, 512, 512, 131072, 1024, 1024, 32768,
]
COMPUTE_S = 0.0071395966642967545


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
