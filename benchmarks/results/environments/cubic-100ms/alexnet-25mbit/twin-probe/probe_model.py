"""TensorFlow link probe of the step of alexnet: 21 tensors, 2,313,000 B each way,
37.3 ms of compute in 17 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    128, 221184, 0, 256, 40, 384, 10240, 221184, 1024, 0,
    9600, 262144, 331776, 204800, 1024, 0, 0, 1048576, 256, 0,
    384,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    0, 4, 2, 1, 7, 5, 7, 6, 7, 3,
    0, 7, 5, 1, 7, 9, 11, 7, 6, 12,
    4,
]
RELEASE_AFTER = [
    16, 11, 16, 10, 10, 11, 7, 14, 10, 16,
    16, 8, 13, 15, 10, 16, 16, 8, 15, 16,
    14,
]
STAGE_COMPUTE_S = [
    0.002098, 0.002137, 0.001463, 0.001174, 0.001431, 0.00208,
    0.002198, 0.001144, 0.00062, 0.001787, 0.000697, 0.003482,
    0.000389, 0.004228, 0.009412, 0.002114, 0.0,
]
BEFORE_S = 0.000826
COMPUTE_S = 0.01159808543426788


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
