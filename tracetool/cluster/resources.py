"""How many TensorFlow tasks this machine can hold, checked before anything starts.

A cluster of N workers is N + 1 TensorFlow processes on this machine (and, when shaped, N + 2
network namespaces). Nothing else bounds N: asked for 100,000 workers, a run would create
namespaces for an hour or start processes until memory ran out, and its clean-up would take
as long. Two limits, both reported in the error so the user sees which one binds:

- memory: each task needs about ``TASK_MEMORY_BYTES`` resident (TensorFlow's runtime and the
  graph; measured on this project's zoo, see the constant), and only ``MEMORY_SHARE`` of the
  memory available now is handed out;
- cores: past ``TASKS_PER_CORE`` tasks per core the tasks measure the scheduler, not the model
  or the link (the measurement flags a saturated CPU long before that).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tracetool.errors import ToolError

# Resident memory of one task, measured with tensorflow-cpu 2.21 while profiling the zoo
# (docs/measure.md, "Limits"): peaks of 0.63-0.66 GiB for a PS task and 0.69-0.78 GiB for a
# worker (mlp, vgg, inception); rounded up for larger models.
TASK_MEMORY_BYTES = 2**30
MEMORY_SHARE = 0.75
TASKS_PER_CORE = 8


@dataclass(frozen=True)
class MachineCapacity:
    cores: int
    available_memory_bytes: int

    @property
    def tasks_by_memory(self) -> int:
        return int(self.available_memory_bytes * MEMORY_SHARE // TASK_MEMORY_BYTES)

    @property
    def tasks_by_cores(self) -> int:
        return TASKS_PER_CORE * self.cores

    @property
    def max_tasks(self) -> int:
        return min(self.tasks_by_memory, self.tasks_by_cores)

    @property
    def max_workers(self) -> int:
        """Workers of one cluster, besides its one PS task."""
        return max(0, self.max_tasks - 1)


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), else total RAM."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def machine_capacity() -> MachineCapacity:
    return MachineCapacity(cores=os.cpu_count() or 1, available_memory_bytes=available_memory_bytes())


def check_cluster_fits(workers: int, option: str = "--workers", capacity: MachineCapacity | None = None) -> None:
    """Refuse a cluster of ``workers`` workers (plus its PS) that this machine cannot hold."""
    capacity = capacity or machine_capacity()
    if workers <= capacity.max_workers:
        return
    raise ToolError(
        f"{option} {workers}: this machine can run at most {capacity.max_workers} workers besides the PS "
        f"({capacity.max_tasks} TensorFlow tasks: {TASKS_PER_CORE} per core on {capacity.cores} cores, and "
        f"{capacity.tasks_by_memory} of about {TASK_MEMORY_BYTES / 2**30:.1f} GiB each in "
        f"{capacity.available_memory_bytes / 2**30:.1f} GiB of available memory); use fewer workers or a bigger machine"
    )
