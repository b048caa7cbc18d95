"""TensorFlow link probe of the step of resnet: 47 tensors, 698,792 B each way,
16.6 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2560, 256, 9216, 147456, 64, 1728, 0, 0, 9216, 0,
    0, 0, 147456, 0, 0, 0, 256, 256, 0, 128,
    0, 64, 8192, 0, 2048, 64, 9216, 256, 128, 128,
    9216, 64, 147456, 73728, 36864, 128, 0, 128, 36864, 18432,
    256, 0, 0, 36864, 0, 64, 40,
]
COMPUTE_S = 0.016599736870924364


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
