"""Variant of validate's twin of inception (``../settled-twin-probe/probe_model.py``): each stage
sleeps its compute times a factor drawn per step from N(1, 0.12), clipped at 0, so that the step's
total varies by about the 2.3% the model's profiled step times vary (0.12 / sqrt(27 stages)).
Asks whether the twin's exact sleeps keep two workers out of the lossy regime the model visits."""

import time

import numpy as np

from tracetool.measure import probe_model
from tracetool.measure.probe_model import build_twin_probe_loss

_RNG = np.random.default_rng()


def _jittered_wait(seconds: float):
    def run(*_: np.ndarray) -> np.float32:
        if seconds > 0:
            time.sleep(seconds * max(0.0, _RNG.normal(1.0, 0.12)))
        return np.float32(1.0)
    return run


probe_model._wait = _jittered_wait

TENSOR_BYTES = [
    384, 192, 128, 0, 10240, 0, 0, 0, 165888, 30720,
    51200, 0, 128, 0, 192, 0, 64, 10240, 0, 64,
    30720, 256, 5120, 64, 128, 2048, 192, 128, 0, 18432,
    1024, 2048, 12800, 64, 0, 0, 2048, 64, 0, 128,
    0, 32, 3456, 0, 192, 0, 128, 115200, 96, 10240,
    73728, 0, 40, 0, 15360, 0, 0, 30720, 9600,
]
# per tensor: the stage of the compute that waits for it, and the stages done before its gradient leaves
GATE_STAGE = [
    8, 8, 4, 0, 5, 0, 0, 0, 8, 8,
    4, 1, 7, 1, 8, 1, 4, 7, 1, 3,
    8, 5, 4, 2, 3, 3, 10, 5, 6, 3,
    2, 2, 2, 2, 1, 1, 2, 2, 3, 1,
    3, 2, 1, 11, 9, 9, 4, 9, 9, 4,
    5, 9, 10, 6, 9, 6, 11, 10, 10,
]
RELEASE_AFTER = [
    13, 11, 16, 26, 16, 26, 26, 26, 13, 11,
    21, 26, 17, 26, 12, 26, 22, 18, 26, 23,
    12, 20, 21, 24, 20, 22, 15, 25, 26, 25,
    24, 23, 24, 25, 26, 26, 25, 26, 26, 26,
    26, 24, 26, 26, 16, 26, 26, 14, 20, 20,
    19, 26, 15, 26, 15, 26, 26, 14, 10,
]
STAGE_COMPUTE_S = [
    0.000641, 0.002296, 0.001167, 0.001317, 0.001778, 0.001263,
    0.000757, 0.002159, 0.001543, 0.001952, 0.002285, 0.001037,
    0.002622, 0.001869, 0.000754, 0.004161, 0.000437, 0.002181,
    0.00242, 0.001733, 0.003984, 0.00223, 0.000812, 0.002316,
    0.002509, 0.001823, 0.0,
]
BEFORE_S = 0.001639
COMPUTE_S = 0.012468838526351722


def build(batch_size: int):
    return build_twin_probe_loss(TENSOR_BYTES, GATE_STAGE, RELEASE_AFTER, STAGE_COMPUTE_S, BEFORE_S)
