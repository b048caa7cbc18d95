"""TensorFlow link probe of resnet's step: 47 tensors, 698,792 B each way,
16.2 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2560, 256, 0, 147456, 1728, 0, 36864, 2048, 0, 0,
    128, 128, 64, 0, 256, 36864, 18432, 9216, 0, 73728,
    36864, 64, 64, 0, 0, 9216, 64, 128, 0, 0,
    9216, 0, 0, 128, 128, 9216, 64, 0, 0, 256,
    0, 40, 147456, 256, 256, 8192, 147456,
]
COMPUTE_S = 0.01623423953491862


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
