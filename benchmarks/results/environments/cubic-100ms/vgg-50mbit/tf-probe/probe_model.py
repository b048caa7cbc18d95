"""TensorFlow link probe of vgg's step: 24 tensors, 2,494,088 B each way,
11.4 ms of compute. Written by tracetool validate; run it again with
``tracetool measure --model THIS_FILE ...``."""

from tracetool.measure.probe_model import build_probe_loss

TENSOR_BYTES = [1024, 1572864, 262144, 384, 0, 96, 331776, 192, 0, 40, 0, 192, 10240, 384, 41472, 2592, 1024, 82944, 20736, 165888, 0, 96, 0, 0]
COMPUTE_S = 0.011433345719680799


def build(batch_size: int):
    return build_probe_loss(TENSOR_BYTES, COMPUTE_S)
