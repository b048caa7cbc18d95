"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
4.2 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    20480, 3211264, 2048, 4194304, 2097152, 4096, 4096, 40,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 0, 2, 1, 2, 0, 1, 2,
]
RELEASE_AFTER = [
    3, 6, 6, 5, 4, 6, 6, 6,
]
STAGE_COMPUTE_S = [
    0.000369, 0.000778, 0.000112, 0.000537, 0.001251, 0.000746,
    0.0,
]
BEFORE_S = 0.000449
COMPUTE_S = 0.014021404381040603


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
