"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
28.3 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    4096, 40, 3211264, 4096, 4194304, 20480, 2048, 2097152,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 3, 0, 1, 1, 3, 2, 2,
]
RELEASE_AFTER = [
    6, 6, 6, 6, 5, 3, 6, 4,
]
STAGE_COMPUTE_S = [
    0.00251, 0.002392, 0.001149, 0.00487, 0.01335, 0.00329,
    0.0,
]
BEFORE_S = 0.000725
COMPUTE_S = 0.020902320787755113


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
