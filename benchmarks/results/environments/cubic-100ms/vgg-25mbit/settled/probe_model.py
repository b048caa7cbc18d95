"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
38.0 ms of compute in 20 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    384, 165888, 41472, 331776, 192, 96, 40, 0, 82944, 2592,
    0, 0, 192, 0, 0, 96, 1024, 262144, 10240, 1024,
    20736, 1572864, 384, 0,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    5, 4, 2, 5, 3, 0, 7, 3, 3, 0,
    6, 6, 2, 6, 6, 1, 7, 7, 7, 6,
    1, 6, 4, 12,
]
RELEASE_AFTER = [
    9, 11, 15, 9, 16, 17, 10, 19, 13, 19,
    19, 19, 17, 19, 19, 19, 10, 7, 7, 10,
    18, 8, 14, 19,
]
STAGE_COMPUTE_S = [
    0.000905, 0.003541, 0.001116, 0.002265, 0.001238, 0.002261,
    0.000868, 0.000855, 0.004545, 0.000106, 0.002158, 0.003256,
    0.001705, 0.001008, 0.002229, 0.000909, 0.001593, 0.00479,
    0.001325, 0.0,
]
BEFORE_S = 0.001364
COMPUTE_S = 0.011559738099830463


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
