"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
9.7 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    4096, 4096, 3211264, 20480, 2048, 2097152, 4194304, 40,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 1, 0, 2, 2, 2, 1, 2,
]
RELEASE_AFTER = [
    6, 6, 6, 3, 6, 4, 5, 6,
]
STAGE_COMPUTE_S = [
    0.001353, 0.001431, 0.000203, 0.000989, 0.002318, 0.001951,
    0.0,
]
BEFORE_S = 0.001428
COMPUTE_S = 0.013892049267478779


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
