"""TensorFlow link probe of inception's step: 59 tensors, 603,496 B each way,
13.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    18432, 2048, 64, 0, 0, 0, 2048, 115200, 0, 30720,
    0, 30720, 0, 0, 0, 256, 192, 192, 40, 96,
    128, 73728, 0, 9600, 384, 15360, 10240, 0, 128, 0,
    192, 0, 165888, 192, 0, 0, 10240, 30720, 128, 0,
    128, 128, 51200, 64, 0, 64, 0, 5120, 10240, 0,
    1024, 0, 64, 12800, 64, 2048, 128, 32, 3456,
]
COMPUTE_S = 0.013576630762390463


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
