"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
48.0 ms of compute in 26 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    2560, 256, 9216, 147456, 64, 1728, 0, 0, 9216, 0,
    0, 0, 147456, 0, 0, 0, 256, 256, 0, 128,
    0, 64, 8192, 0, 2048, 64, 9216, 256, 128, 128,
    9216, 64, 147456, 73728, 36864, 128, 0, 128, 36864, 18432,
    256, 0, 0, 36864, 0, 64, 40,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    10, 9, 2, 9, 2, 0, 0, 0, 4, 0,
    0, 0, 9, 0, 0, 0, 9, 8, 0, 5,
    0, 1, 8, 0, 5, 3, 1, 8, 6, 5,
    3, 0, 8, 8, 5, 5, 11, 7, 6, 5,
    8, 12, 9, 7, 13, 4, 10,
]
RELEASE_AFTER = [
    10, 15, 21, 11, 25, 24, 25, 25, 22, 25,
    25, 25, 13, 25, 25, 25, 15, 15, 25, 23,
    25, 25, 14, 25, 18, 25, 23, 21, 23, 23,
    24, 25, 14, 15, 16, 25, 25, 25, 17, 20,
    25, 25, 25, 19, 25, 25, 15,
]
STAGE_COMPUTE_S = [
    0.000919, 0.001228, 0.00159, 0.001248, 0.002592, 0.001146,
    0.001033, 0.001992, 0.00197, 0.001255, 0.002512, 0.000402,
    0.001965, 0.002491, 0.00264, 0.001631, 0.002394, 0.00122,
    0.002187, 0.002191, 0.003021, 0.002858, 0.003721, 0.003048,
    0.0, 0.0,
]
BEFORE_S = 0.000707
COMPUTE_S = 0.016599736870924364


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
