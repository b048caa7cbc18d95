"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
13.9 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2048, 2097152, 4096, 40, 4194304, 4096, 3211264, 20480,
]
COMPUTE_S = 0.013855151095269358


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
