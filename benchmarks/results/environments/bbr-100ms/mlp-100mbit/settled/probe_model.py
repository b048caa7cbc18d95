"""TensorFlow link probe of the step of mlp: 8 tensors, 9,533,480 B each way,
8.8 ms of compute in 7 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2048, 3211264, 4194304, 2097152, 4096, 4096, 40, 20480,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    2, 0, 1, 2, 1, 0, 2, 2,
]
RELEASE_AFTER = [
    6, 6, 5, 4, 6, 6, 6, 3,
]
STAGE_COMPUTE_S = [
    0.000801, 0.00144, 0.000251, 0.001197, 0.002623, 0.001973,
    0.0,
]
BEFORE_S = 0.000501
COMPUTE_S = 0.013481647820158038


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
