"""The model zoo: scaled-down members of the families the ICPE 2020 paper validated.

Every model is a module with ``build(batch_size: int) -> tf.Tensor`` that returns the scalar
training loss, builds its variables with ``tf.compat.v1.get_variable`` and feeds itself
synthetic input, so a profile needs no data set. Optimizer and variable placement belong to
the collector, never to the model, so the same file serves profiling and measurement.
"""

ZOO_MODELS: tuple[str, ...] = ("alexnet", "vgg", "inception", "resnet", "mlp", "widedeep")

# Real architectures from Keras applications, named ``keras:NAME`` (models/keras_applications.py).
KERAS_APPLICATIONS: tuple[str, ...] = ("resnet50", "inception_v3", "vgg16", "mobilenet_v2")
