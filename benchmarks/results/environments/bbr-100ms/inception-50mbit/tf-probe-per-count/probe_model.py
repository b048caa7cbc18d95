"""TensorFlow link probe of inception's step: 59 tensors, 603,496 B each way,
13.9 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    192, 0, 30720, 0, 0, 0, 32, 3456, 12800, 0,
    128, 64, 18432, 2048, 0, 1024, 0, 64, 0, 2048,
    64, 0, 128, 192, 96, 30720, 0, 40, 115200, 15360,
    0, 256, 128, 9600, 0, 192, 128, 73728, 10240, 0,
    384, 30720, 10240, 0, 128, 165888, 0, 0, 64, 192,
    128, 0, 2048, 51200, 64, 0, 5120, 0, 10240,
]
COMPUTE_S = 0.013911427621552924


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
