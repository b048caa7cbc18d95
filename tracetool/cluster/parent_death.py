"""Task processes end with the run that started them, even when that run is SIGKILLed.

A run that is killed outright cannot stop its task processes, and a PS task serves forever:
it would hold its port and memory until the next run's clean-up. Linux can deliver a signal to
a process when its parent dies (``prctl(PR_SET_PDEATHSIG)``); every task sets that up for
itself as its first act, and exits at once if its parent is already gone (the parent passes its
PID in ``PARENT_PID_ENV``, since the task's parent after ``nsenter`` exec is the run itself).

Stdlib only: the same lines run in TensorFlow tasks and in the link probe's plain processes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PARENT_PID_ENV = "TFSIM_PARENT_PID"
_PR_SET_PDEATHSIG = 1

# The same, for processes started as ``python -c CODE``: prepend it to CODE.
DIE_WITH_PARENT_CODE = (
    "import ctypes as _c, os as _o, signal as _s, sys as _y\n"
    "try:\n"
    "    _c.CDLL(None, use_errno=True).prctl(1, int(_s.SIGKILL))\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    f"if _o.getppid() != int(_o.environ.get('{PARENT_PID_ENV}', _o.getppid())):\n"
    "    _y.exit(1)\n"
)


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies; exit now if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: the next run's clean-up still removes us
        return
    expected = os.environ.get(PARENT_PID_ENV)
    if expected is not None and os.getppid() != int(expected):
        sys.exit(1)


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus the PID its children must outlive no longer than."""
    env = dict(os.environ)
    env[PARENT_PID_ENV] = str(os.getpid())
    if extra:
        env.update(extra)
    return env
