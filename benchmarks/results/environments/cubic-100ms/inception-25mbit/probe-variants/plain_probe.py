"""TensorFlow link probe of the step of inception: 59 tensors, 603,496 B each way,
12.5 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    384, 192, 128, 0, 10240, 0, 0, 0, 165888, 30720,
    51200, 0, 128, 0, 192, 0, 64, 10240, 0, 64,
    30720, 256, 5120, 64, 128, 2048, 192, 128, 0, 18432,
    1024, 2048, 12800, 64, 0, 0, 2048, 64, 0, 128,
    0, 32, 3456, 0, 192, 0, 128, 115200, 96, 10240,
    73728, 0, 40, 0, 15360, 0, 0, 30720, 9600,
]
COMPUTE_S = 0.012468838526351722


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
