"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
7.9 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2048, 2097152, 4096, 40, 4194304, 4096, 3211264, 20480,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 2, 1, 2, 1, 0, 0, 2,
]
RELEASE_AFTER = [
    6, 3, 6, 6, 4, 6, 5, 2,
]
STAGE_COMPUTE_S = [
    0.000717, 0.001383, 0.000924, 0.002448, 0.001797, 0.0,
    0.0,
]
BEFORE_S = 0.000609
COMPUTE_S = 0.013855151095269358


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
