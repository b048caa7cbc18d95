"""TensorFlow link probe of resnet's step: 47 tensors, 698,792 B each way,
15.5 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    9216, 147456, 0, 0, 36864, 0, 64, 64, 0, 0,
    9216, 1728, 0, 0, 64, 0, 128, 128, 9216, 64,
    0, 2048, 0, 9216, 0, 0, 128, 73728, 128, 36864,
    128, 64, 0, 0, 40, 256, 2560, 147456, 256, 36864,
    256, 256, 256, 147456, 0, 8192, 18432,
]
COMPUTE_S = 0.015516019446387586


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
