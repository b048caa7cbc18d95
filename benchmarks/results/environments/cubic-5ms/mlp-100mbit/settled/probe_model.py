"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
13.4 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2048, 2097152, 40, 4096, 3211264, 4194304, 20480, 4096,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 2, 2, 1, 0, 1, 2, 0,
]
RELEASE_AFTER = [
    6, 3, 6, 6, 5, 4, 2, 6,
]
STAGE_COMPUTE_S = [
    0.000677, 0.001412, 0.001228, 0.003857, 0.00482, 0.0,
    0.0,
]
BEFORE_S = 0.001453
COMPUTE_S = 0.012350105877796835


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
