"""A compiled event loop for the configurations whose policies it holds as arrays.

The reference engine (``replay.engine.loop``) stays the definition of a replay; this package
replays the same runs with the loop compiled by numba, as flat NumPy arrays, integer codes and
an array heap, so that sweeps to thousands of workers run at millions of ops per second.
``unsupported_setting`` says which configurations it holds; everything else stays with the
reference. Importing this package does not import numba: ``kernel_unavailable`` and
``simulate_fast`` do, so a machine without it still runs every replay.
"""

from replay.engine.kernel.entry import (
    KernelUnavailable,
    compile_kernel,
    kernel_unavailable,
    simulate_fast,
)
from replay.engine.kernel.support import unsupported_setting

__all__ = [
    "KernelUnavailable",
    "compile_kernel",
    "kernel_unavailable",
    "simulate_fast",
    "unsupported_setting",
]
