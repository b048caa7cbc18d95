"""Whether the process that owns a leftover is still alive.

Names of namespaces, spec folders, staging folders and records carry the PID of the run that
made them; a later run removes only those whose run is gone.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists (a zombie counts as alive until its parent reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
