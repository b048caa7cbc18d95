"""Real architectures from Keras applications, with random weights, at a chosen input size.

``--model keras:resnet50`` (or ``inception_v3``, ``vgg16``, ``mobilenet_v2``) builds the network
Keras ships, not a stand-in: the same layers, parameters and operations, initialized at random
(``weights=None``: nothing is downloaded). ``input_size`` scales the images (and so the compute)
without changing the parameters except where the classifier's input depends on it (VGG-16's
flatten); ``classes`` sizes the classifier. The full ImageNet models are ``input_size=224
classes=1000`` (ResNet-50: 25,636,712 parameters; Inception-v3 needs ``input_size`` of at least 75).

Like a user's model file, this module only describes the network: ``build_keras`` returns the
Keras model and its loss, and the collector trains it (tracetool/collect/keras_models.py).
"""

from __future__ import annotations

from typing import Any

from models import KERAS_APPLICATIONS

# Smallest input each architecture accepts (Keras refuses smaller images).
MIN_INPUT_SIZE = {"resnet50": 32, "inception_v3": 75, "vgg16": 32, "mobilenet_v2": 32}
DEFAULT_INPUT_SIZE = 64
# Past this an image batch alone outgrows memory at any batch size a profile uses.
MAX_INPUT_SIZE = 1024
DEFAULT_CLASSES = 10


def build_keras(application: str, input_size: int = DEFAULT_INPUT_SIZE,
                classes: int = DEFAULT_CLASSES) -> tuple[Any, Any]:
    """The application's Keras model for ``input_size`` x ``input_size`` RGB images and
    ``classes`` classes, and its loss (logits against class ids)."""
    check_arguments(application, input_size, classes)
    import tf_keras

    constructors = {
        "resnet50": tf_keras.applications.ResNet50,
        "inception_v3": tf_keras.applications.InceptionV3,
        "vgg16": tf_keras.applications.VGG16,
        "mobilenet_v2": tf_keras.applications.MobileNetV2,
    }
    model = constructors[application](weights=None, input_shape=(input_size, input_size, 3), classes=classes,
                                      classifier_activation=None)
    return model, tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def check_arguments(application: str, input_size: int = DEFAULT_INPUT_SIZE, classes: int = DEFAULT_CLASSES) -> None:
    """Refuse what Keras would refuse, before TensorFlow is imported or a cluster started."""
    if application not in KERAS_APPLICATIONS:
        raise ValueError(f"unknown Keras application '{application}'; choose one of {', '.join(KERAS_APPLICATIONS)}")
    if input_size < MIN_INPUT_SIZE[application]:
        raise ValueError(f"keras:{application} needs input_size of at least {MIN_INPUT_SIZE[application]}, "
                         f"got {input_size}")
    if input_size > MAX_INPUT_SIZE:
        raise ValueError(f"input_size {input_size} is above the {MAX_INPUT_SIZE} this tool builds; "
                         "ImageNet models use 224 to 299")
    if classes < 2:
        raise ValueError(f"classes must be at least 2, got {classes}")
