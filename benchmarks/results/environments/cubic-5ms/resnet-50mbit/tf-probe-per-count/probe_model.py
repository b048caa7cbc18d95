"""TensorFlow link probe of resnet's step: 47 tensors, 698,792 B each way,
16.4 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    9216, 0, 0, 0, 0, 40, 2560, 256, 147456, 0,
    147456, 128, 128, 0, 0, 36864, 0, 64, 256, 0,
    73728, 0, 64, 9216, 147456, 0, 256, 36864, 9216, 64,
    256, 0, 0, 64, 1728, 256, 0, 128, 18432, 0,
    128, 2048, 64, 8192, 36864, 128, 9216,
]
COMPUTE_S = 0.0163988777387733


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
