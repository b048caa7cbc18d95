"""Import TensorFlow without its C++ start-up banner on the terminal.

TensorFlow prints oneDNN and absl notices to file descriptor 2 before any log level applies;
a command whose error contract is "one line" cannot let those through.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_tensorflow_quietly() -> ModuleType:
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tensorflow
