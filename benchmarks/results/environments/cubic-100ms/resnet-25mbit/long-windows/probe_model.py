"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
15.8 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    9216, 1728, 0, 0, 256, 40, 147456, 2560, 0, 256,
    256, 256, 0, 147456, 8192, 0, 36864, 0, 147456, 128,
    0, 0, 64, 64, 128, 0, 9216, 0, 256, 36864,
    0, 0, 73728, 128, 128, 0, 9216, 36864, 2048, 64,
    0, 128, 9216, 64, 18432, 64, 0,
]
COMPUTE_S = 0.01580907922826008


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
