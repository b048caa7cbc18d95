"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
41.8 ms of compute in 31 stages as the model computes them. Written by tracetool validate;
run it again with ``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_twin_probe_loss

TENSOR_BYTES = [
    147456, 256, 256, 0, 8192, 0, 36864, 0, 9216, 128,
    128, 9216, 256, 128, 2048, 64, 36864, 73728, 128, 128,
    18432, 9216, 1728, 0, 40, 0, 0, 2560, 256, 0,
    64, 256, 147456, 0, 64, 0, 36864, 0, 9216, 0,
    64, 147456, 0, 0, 0, 0, 64,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    9, 9, 9, 0, 9, 0, 8, 0, 2, 7,
    6, 3, 9, 8, 6, 4, 7, 9, 8, 6,
    6, 4, 1, 3, 11, 1, 4, 11, 10, 1,
    3, 10, 10, 6, 5, 6, 8, 6, 5, 4,
    1, 10, 11, 13, 9, 12, 2,
]
RELEASE_AFTER = [
    12, 17, 18, 30, 15, 30, 18, 30, 24, 23,
    23, 25, 18, 26, 20, 28, 19, 16, 26, 30,
    22, 27, 29, 30, 17, 30, 30, 11, 18, 30,
    30, 30, 14, 30, 30, 30, 21, 30, 29, 30,
    30, 15, 30, 30, 30, 30, 30,
]
STAGE_COMPUTE_S = [
    0.000253, 0.000569, 0.00132, 0.001844, 0.000358, 0.001761,
    0.00056, 0.00187, 0.001748, 0.001719, 0.001057, 0.002319,
    0.000683, 0.00133, 0.002424, 0.00138, 0.001065, 0.001426,
    0.001615, 0.00121, 0.000949, 0.00183, 0.001313, 0.001303,
    0.002493, 0.001198, 0.001431, 0.00132, 0.002011, 0.0,
    0.0,
]
BEFORE_S = 0.001412
COMPUTE_S = 0.015094025971678277


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
