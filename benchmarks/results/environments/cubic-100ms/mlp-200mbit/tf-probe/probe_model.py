"""TensorFlow link probe of mlp's step: 8 tensors, 9,533,480 B each way,
14.0 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [20480, 3211264, 2048, 4194304, 2097152, 4096, 4096, 40]
COMPUTE_S = 0.014021404381040603


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
