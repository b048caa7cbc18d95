"""TensorFlow link probe of inception's step: 59 tensors, 603,496 B each way,
12.8 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    10240, 73728, 9600, 384, 192, 0, 0, 0, 165888, 64,
    128, 0, 192, 0, 30720, 51200, 0, 0, 0, 64,
    128, 30720, 0, 2048, 0, 256, 5120, 0, 0, 64,
    128, 10240, 10240, 2048, 0, 0, 0, 128, 18432, 64,
    0, 2048, 128, 64, 32, 12800, 0, 1024, 3456, 0,
    96, 192, 15360, 128, 115200, 192, 40, 0, 30720,
]
COMPUTE_S = 0.012772965916102996


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
