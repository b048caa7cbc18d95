"""``tracetool profile``: run a model on one PS and one worker and keep its traces.

The output folder is built under a temporary name and renamed into place at the end, so an
interrupted or failed profile never leaves a half-written profile behind and never destroys
an earlier one.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tracetool.atomic_files import write_json_atomically
from tracetool.cluster import LocalCluster
from tracetool.errors import ToolError
from tracetool.machine_facts import machine_facts
from tracetool.model_loader import check_model_name
from tracetool.task_spec import OPTIMIZERS, TaskSpec

META_FILE = "meta.json"


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
    allow_loopback: bool = False  # run without a namespace when not root (servers then listen on all interfaces)

    def check(self) -> None:
        check_model_name(self.model)
        if self.batch_size < 1:
            raise ToolError(f"--batch-size must be at least 1, got {self.batch_size}")
        if self.traced_steps < 1:
            raise ToolError(f"--steps must be at least 1, got {self.traced_steps}")
        if self.warmup_steps < 0 or self.untraced_steps < 1:
            raise ToolError("--warmup must be >= 0 and --untraced-steps >= 1")
        if self.intra_op_threads < 1 or self.inter_op_threads < 1:
            raise ToolError("thread counts must be at least 1")
        if self.optimizer not in OPTIMIZERS:
            raise ToolError(f"unknown optimizer '{self.optimizer}'; choose one of {', '.join(OPTIMIZERS)}")
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise ToolError(f"--out {self.out_dir} exists and is not a directory")


def _stats(values: list[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "samples": values,
    }


def run_profile(request: ProfileRequest, show_progress: bool = True, timeout_s: float = 300.0) -> Path:
    """Profile the model; return the path of the finished profile folder."""
    request.check()
    out_dir = request.out_dir.resolve()
    staging = out_dir.parent / f".{out_dir.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    started = time.monotonic()
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
    )
    facts: dict[str, Any] = {}
    try:
        with LocalCluster(workers=1, isolate=not (request.allow_loopback and os.geteuid() != 0)) as cluster:
            spec = TaskSpec(**{**spec.__dict__, "cluster": cluster.cluster_addresses()})
            cluster.start(spec)
            total = request.warmup_steps + request.untraced_steps + request.traced_steps
            bar = tqdm(
                total=total,
                desc=f"profile {Path(request.model).stem}",
                unit="step",
                disable=not show_progress,
                file=sys.stderr,
            )
            with bar:
                for _, event in cluster.worker_events(timeout_s):
                    kind = event["event"]
                    if kind == "step":
                        bar.set_postfix_str(event["phase"])
                        bar.update(event["done"] - bar.n)
                    elif kind in ("graph_built", "profile_done"):
                        facts.update(event)
            isolation = "network namespace (lo only)" if cluster.isolate else "loopback"
        if "untraced_step_times_s" not in facts:
            raise ToolError("the worker ended without reporting its step times")
        untraced = facts["untraced_step_times_s"]
        variables = facts["variables"]
        trainable = [v for v in variables if v["trainable"]]
        meta = {
            "model": request.model,
            "batch_size": request.batch_size,
            "optimizer": request.optimizer,
            "model_kwargs": request.model_kwargs,
            "variables": variables,
            "parameter_bytes": sum(v["bytes"] for v in trainable),
            "parameter_count": sum(v["bytes"] // 4 for v in trainable),
            "tensorflow_version": facts.get("tensorflow_version", ""),
            **machine_facts(),
            "intra_op_threads": request.intra_op_threads,
            "inter_op_threads": request.inter_op_threads,
            "network": isolation,
            "warmup_steps": request.warmup_steps,
            "untraced_step_time_s": _stats(untraced),
            "untraced_steps_per_second": 1.0 / statistics.fmean(untraced),
            "untraced_steps_per_second_std": statistics.pstdev([1.0 / s for s in untraced])
            if len(untraced) > 1
            else 0.0,
            "traced_step_time_s": _stats(facts["traced_step_times_s"]),
            "traced_steps": request.traced_steps,
            "profile_wall_time_s": time.monotonic() - started,
            "command_line": request.command_line,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_json_atomically(staging / META_FILE, meta)
        _replace_dir(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def _replace_dir(staging: Path, target: Path) -> None:
    """Swap the finished folder into place; an older profile is removed only after that."""
    old = target.parent / f".{target.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
