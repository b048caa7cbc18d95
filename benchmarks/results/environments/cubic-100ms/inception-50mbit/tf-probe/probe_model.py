"""TensorFlow link probe of inception's step: 59 tensors, 603,496 B each way,
14.5 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [192, 0, 51200, 30720, 0, 192, 0, 165888, 0, 96, 30720, 256, 5120, 192, 15360, 0, 73728, 128, 1024, 115200, 192, 128, 0, 10240, 40, 0, 0, 10240, 0, 128, 9600, 0, 30720, 0, 64, 0, 0, 128, 0, 64, 384, 128, 64, 64, 2048, 18432, 2048, 10240, 0, 0, 64, 0, 2048, 128, 12800, 32, 3456, 0, 0]
COMPUTE_S = 0.014468995143219643


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
