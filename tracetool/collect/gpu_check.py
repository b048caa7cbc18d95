"""Whether TensorFlow sees a GPU here, asked before any server starts.

``tracetool profile --device gpu`` must refuse in one line on a machine where the worker would
silently run on the CPU. TensorFlow is asked in a short child process, so the parent never loads
it (its start-up costs seconds and memory the cluster's tasks need). The reason given names the
usual cause: the CPU-only wheel (``tensorflow-cpu``, this tool's default), or no NVIDIA device.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import subprocess
import sys

from tracetool.errors import ToolError

_COUNT_GPUS = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
_FIX = "install a GPU build of TensorFlow (pip install 'tensorflow[and-cuda]') on a machine with an NVIDIA driver, " \
       "or profile with --device cpu"


def _distribution_installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def visible_gpus(timeout_s: float = 120.0) -> int:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", _COUNT_GPUS], capture_output=True, text=True, env=env,
                            timeout=timeout_s, check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines or not lines[-1].isdigit():
        raise ToolError("--device gpu: TensorFlow failed to start to list its GPUs; run "
                        f"python -c \"{_COUNT_GPUS}\" to see why")
    return int(lines[-1])


def check_gpu_visible() -> None:
    if visible_gpus() > 0:
        return
    if _distribution_installed("tensorflow-cpu") and not _distribution_installed("tensorflow"):
        why = "the installed TensorFlow is tensorflow-cpu, built without GPU support"
    elif not glob.glob("/dev/nvidia[0-9]*"):
        why = "no NVIDIA GPU (/dev/nvidia*) is visible on this machine"
    else:
        why = "TensorFlow found no usable GPU (CUDA libraries or driver missing)"
    raise ToolError(f"--device gpu: {why}; {_FIX}")
