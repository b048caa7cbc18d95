"""``tracetool profile``: run a model on one PS and one worker and keep its traces.

The output folder is built under a temporary name and renamed into place at the end
(``tracetool.outputs``), so an interrupted or failed profile never leaves a half-written profile
behind, never destroys an earlier one, and never replaces a folder the tool did not write.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.atomic_files import write_json_atomically
from tracetool.cluster.local_cluster import LocalCluster
from tracetool.cluster.machine_facts import machine_facts
from tracetool.cluster.resources import check_cluster_fits
from tracetool.cluster.task_spec import OPTIMIZERS, TaskSpec
from tracetool.collect.gpu_check import check_gpu_visible
from tracetool.collect.model_loader import (
    MAX_BATCH_SIZE,
    check_model_arguments,
    check_model_name,
    model_label,
    require_collector,
)
from tracetool.errors import ToolError
from tracetool.outputs import check_output_folder, output_folder
from tracetool.progress import StepProgress

META_FILE = "meta.json"
# Bounds that keep a profile finite: traced steps are 0.1-0.7 MB each on disk, untraced ones
# only take time.
MAX_TRACED_STEPS = 1000
MAX_UNTRACED_STEPS = 100_000


@dataclass(frozen=True)
class ProfileRequest:
    model: str
    batch_size: int
    traced_steps: int
    out_dir: Path
    optimizer: str = "sgd"
    warmup_steps: int = 5
    untraced_steps: int = 20
    intra_op_threads: int = 1
    inter_op_threads: int = 1
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    command_line: str = ""
    workers: int = 1  # more than one traces every worker of a contended cluster, into worker-<i>/
    allow_loopback: bool = False  # run without a namespace when not root (servers then listen on all interfaces)
    device: str = "cpu"  # "gpu": the worker's ops on its first GPU (tracetool.collect.gpu_check)

    def check(self) -> None:
        check_model_name(self.model)
        check_model_arguments(self.model, self.model_kwargs)
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            raise ToolError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}, got {self.batch_size}")
        if self.workers < 1:
            raise ToolError(f"--workers must be at least 1, got {self.workers}")
        if not 1 <= self.traced_steps <= MAX_TRACED_STEPS:
            raise ToolError(f"--steps must be between 1 and {MAX_TRACED_STEPS}, got {self.traced_steps}")
        if not (0 <= self.warmup_steps <= MAX_UNTRACED_STEPS and 1 <= self.untraced_steps <= MAX_UNTRACED_STEPS):
            raise ToolError(f"--warmup must be between 0 and {MAX_UNTRACED_STEPS} and --untraced-steps between 1 and "
                            f"{MAX_UNTRACED_STEPS}")
        if self.intra_op_threads < 1 or self.inter_op_threads < 1:
            raise ToolError("thread counts must be at least 1")
        if self.optimizer not in OPTIMIZERS:
            raise ToolError(f"unknown optimizer '{self.optimizer}'; choose one of {', '.join(OPTIMIZERS)}")
        check_cluster_fits(self.workers, "--workers")
        check_output_folder(self.out_dir)
        if self.device == "gpu":
            check_gpu_visible()


def _stats(values: list[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "samples": values,
    }


def run_profile(request: ProfileRequest, show_progress: bool = True, timeout_s: float = 300.0) -> Path:
    """Profile the model; return the path of the finished profile folder."""
    request.check()
    require_collector(request.model)
    out_dir = Path(os.path.abspath(request.out_dir))
    started = time.monotonic()
    with output_folder(out_dir, "tracetool profile") as staging:
        meta = _trace_cluster(request, staging, show_progress, timeout_s)
        meta["profile_wall_time_s"] = time.monotonic() - started
        write_json_atomically(staging / META_FILE, meta)
    return out_dir


def _trace_cluster(request: ProfileRequest, staging: Path, show_progress: bool, timeout_s: float) -> dict[str, Any]:
    """Run the cluster, with the workers writing their traces into ``staging``; return meta.json's content."""
    spec = TaskSpec(
        mode="profile",
        cluster={},
        model=str(Path(request.model).resolve()) if request.model.endswith(".py") else request.model,
        batch_size=request.batch_size,
        optimizer=request.optimizer,
        intra_op_threads=request.intra_op_threads,
        inter_op_threads=request.inter_op_threads,
        warmup_steps=request.warmup_steps,
        untraced_steps=request.untraced_steps,
        traced_steps=request.traced_steps,
        out_dir=str(staging),
        model_kwargs=request.model_kwargs,
        device=request.device,
    )
    per_worker: dict[str, dict[str, Any]] = {}
    isolate = not (request.allow_loopback and os.geteuid() != 0)
    with LocalCluster(workers=request.workers, isolate=isolate) as cluster:
        spec = TaskSpec(**{**spec.__dict__, "cluster": cluster.cluster_addresses()})
        cluster.start(spec)
        steps_per_worker = request.warmup_steps + request.untraced_steps + request.traced_steps
        done: dict[str, int] = {}
        progress = StepProgress(steps_per_worker * request.workers, f"profile {model_label(request.model)}",
                                enabled=show_progress)
        with progress:
            for worker, event in cluster.worker_events(timeout_s):
                kind = event["event"]
                if kind == "step":
                    done[worker] = event["done"]
                    progress.update(sum(done.values()), event["phase"])
                elif kind in ("graph_built", "profile_done"):
                    per_worker.setdefault(worker, {}).update(event)
        isolation = "network namespace (lo only)" if cluster.isolate else "loopback"
        worker_names = [t.name for t in cluster.worker_tasks]
    if any("untraced_step_times_s" not in per_worker.get(w, {}) for w in worker_names):
        raise ToolError("a worker ended without reporting its step times")
    return _profile_meta(request, [per_worker[w] for w in worker_names], isolation)


def _profile_meta(request: ProfileRequest, workers: list[dict[str, Any]], isolation: str) -> dict[str, Any]:
    """meta.json: the job, the machine, and the measured step times (worker 0's at top level)."""
    first = workers[0]
    keras = first.get("model_facts")
    # What a step downloads whole: every trainable variable, and a Keras model's batch-norm
    # statistics where its fused op reads them on the worker (training_graph.variable_reads)
    downloaded = [v for v in first["variables"]
                  if v.get("read_by_worker", "whole" if v["trainable"] else None) == "whole"]
    tables = [v for v in first["variables"] if v.get("read_by_worker") == "rows"]
    per_worker = [
        {
            "task_index": i,
            "untraced_step_time_s": _stats(w["untraced_step_times_s"]),
            "untraced_steps_per_second": 1.0 / statistics.fmean(w["untraced_step_times_s"]),
            "traced_step_time_s": _stats(w["traced_step_times_s"]),
        }
        for i, w in enumerate(workers)
    ]
    untraced = first["untraced_step_times_s"]
    return {
        "model": request.model,
        "batch_size": request.batch_size,
        "optimizer": request.optimizer,
        "model_kwargs": request.model_kwargs,
        "workers": request.workers,
        "variables": first["variables"],
        "parameter_bytes": sum(v["bytes"] for v in downloaded),
        "parameter_count": sum(v["bytes"] // 4 for v in downloaded),
        # tables a step reads by rows (embedding lookups): their rows, not their bytes, cross the link
        **({"embedding_tables": [{"name": v["name"], "rows": v["shape"][0], "bytes": v["bytes"]} for v in tables]}
           if tables else {}),
        **({"keras": keras} if keras else {}),
        "tensorflow_version": first.get("tensorflow_version", ""),
        **machine_facts(),
        "intra_op_threads": request.intra_op_threads,
        "inter_op_threads": request.inter_op_threads,
        "device": request.device,
        "network": isolation,
        "warmup_steps": request.warmup_steps,
        "untraced_step_time_s": per_worker[0]["untraced_step_time_s"],
        "untraced_steps_per_second": per_worker[0]["untraced_steps_per_second"],
        "untraced_steps_per_second_std": statistics.pstdev([1.0 / s for s in untraced]) if len(untraced) > 1 else 0.0,
        "total_untraced_steps_per_second": sum(w["untraced_steps_per_second"] for w in per_worker),
        "per_worker": per_worker,
        "traced_step_time_s": per_worker[0]["traced_step_time_s"],
        "traced_steps": request.traced_steps,
        "command_line": request.command_line,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }

