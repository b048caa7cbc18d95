"""TensorFlow link probe of resnet's step: 47 tensors, 698,792 B each way,
15.5 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    2560, 256, 0, 128, 0, 9216, 1728, 256, 147456, 8192,
    0, 128, 0, 64, 147456, 0, 256, 36864, 2048, 0,
    0, 0, 73728, 128, 128, 9216, 128, 36864, 18432, 0,
    0, 64, 0, 9216, 64, 9216, 36864, 0, 0, 64,
    64, 0, 0, 256, 40, 147456, 256,
]
COMPUTE_S = 0.01554255910377933


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
