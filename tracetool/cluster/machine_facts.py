"""Facts about the machine a profile or measurement ran on, recorded next to the results."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts() -> dict[str, object]:
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
        "python_version": platform.python_version(),
    }
