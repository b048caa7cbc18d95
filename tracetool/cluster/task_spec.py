"""What a TensorFlow task process is told to do: one JSON file shared by parent and child.

Keeping it a frozen dataclass written to disk (rather than a long command line) lets the same
spec start a task on loopback, in a namespace, or by hand on a real host.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OPTIMIZERS = ("sgd", "momentum", "adam")

MIN_SETTLE_S = 2.0


@dataclass(frozen=True)
class TaskSpec:
    mode: str  # "profile", "measure" or "compute" (compute-only steps, no cluster: tracetool.measure.slow_workers)
    cluster: dict[str, list[str]]
    model: str
    batch_size: int
    optimizer: str = "sgd"
    learning_rate: float = 0.01
    intra_op_threads: int = 1
    inter_op_threads: int = 1
    warmup_steps: int = 5
    untraced_steps: int = 20
    traced_steps: int = 5
    duration_s: float = 20.0
    # mode "measure": training between the last worker warm and the window start, at least long
    # enough for every worker to see the start (--settle)
    settle_s: float = MIN_SETTLE_S
    out_dir: str = ""
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    # "async" (between-graph replication), or "sync" / "backup": SyncReplicasOptimizer aggregating
    # replicas_to_aggregate gradients per update
    sync: str = "async"
    replicas_to_aggregate: int | None = None
    # where the worker's ops run: "cpu", or "gpu" (its first GPU; ops without a GPU kernel stay on the CPU)
    device: str = "cpu"
    # mode "compute": the CPU-quota groups to time compute-only steps in, each against no quota
    cpu_quota_groups: list[str] = field(default_factory=list)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @staticmethod
    def load(path: Path) -> TaskSpec:
        return TaskSpec(**json.loads(Path(path).read_text()))
