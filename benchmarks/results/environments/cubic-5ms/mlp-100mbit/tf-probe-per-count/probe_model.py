"""TensorFlow link probe of mlp's step: 8 tensors, 9,533,480 B each way,
12.4 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2048, 2097152, 40, 4096, 3211264, 4194304, 20480, 4096,
]
COMPUTE_S = 0.012350105877796835


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
