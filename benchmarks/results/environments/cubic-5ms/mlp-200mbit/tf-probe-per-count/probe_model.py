"""TensorFlow link probe of mlp's step: 8 tensors, 9,533,480 B each way,
13.9 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    4096, 4096, 3211264, 20480, 2048, 2097152, 4194304, 40,
]
COMPUTE_S = 0.013892049267478779


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
