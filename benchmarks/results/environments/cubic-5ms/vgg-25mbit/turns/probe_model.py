"""TensorFlow link probe of the step of vgg: 24 tensors, 2,494,088 B each way,
11.1 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [
    0, 165888, 192, 0, 41472, 96, 384, 0, 262144, 96,
    1024, 1572864, 0, 2592, 40, 384, 0, 20736, 10240, 331776,
    192, 1024, 0, 82944,
]
COMPUTE_S = 0.011114765065852295


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
