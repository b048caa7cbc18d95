"""TensorFlow link probe of inception's step: 59 tensors, 603,496 B each way,
14.0 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2048, 0, 0, 192, 0, 0, 40, 115200, 96, 128,
    73728, 9600, 0, 15360, 10240, 0, 0, 384, 192, 0,
    0, 192, 165888, 30720, 128, 0, 128, 0, 192, 51200,
    64, 10240, 30720, 0, 5120, 64, 256, 128, 2048, 10240,
    0, 0, 30720, 0, 0, 64, 64, 18432, 2048, 12800,
    0, 128, 0, 32, 3456, 1024, 0, 128, 64,
]
COMPUTE_S = 0.01395089570675298


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
