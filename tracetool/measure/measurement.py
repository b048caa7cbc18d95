"""``tracetool measure``: real asynchronous PS clusters of 1..N workers, and their throughput.

For each worker count it starts one PS process and N worker processes running the same
training graph as ``profile`` (between-graph replication, worker 0 is chief). With a bandwidth,
every task gets its own network namespace on a bridge and the PS link is shaped in both
directions (``tracetool.cluster.topology``); without, all tasks share one loopback-only namespace
(``LocalCluster``). The workers agree on a common steady-state window through the PS
(``tracetool.measure.worker``); this module watches them, reads the CPU time of every process
around that window, and turns the chief's per-bin step counts into rates with a spread.

The same worker code runs on real hosts (``measure_on_host``); there each host starts its own
task and the chief writes the result. ``measured.json`` is written atomically.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from tracetool.atomic_files import write_json_atomically, write_text_atomically
from tracetool.cluster import leftovers, netns, tcp_settings
from tracetool.cluster.cpu_quota import CpuQuota, require_cpu_controller
from tracetool.cluster.local_cluster import LocalCluster
from tracetool.cluster.machine_facts import machine_facts
from tracetool.cluster.processes import TaskGroup, python_module_argv
from tracetool.cluster.resources import check_cluster_fits
from tracetool.cluster.task_spec import MIN_SETTLE_S, OPTIMIZERS, TaskSpec
from tracetool.cluster.topology import (
    DEFAULT_QUEUE,
    DEFAULT_TCP_CONGESTION_CONTROL,
    QueueSize,
    ShapedTopology,
    format_bandwidth,
)
from tracetool.collect.model_loader import (
    MAX_BATCH_SIZE,
    check_model_arguments,
    check_model_name,
    model_label,
    require_collector,
)
from tracetool.errors import ToolError
from tracetool.measure.repeats import ALONGSIDE, MAX_REPEATS, check_more_runs, combine_runs, runs_this_round
from tracetool.measure.run_plan import describe_plan
from tracetool.measure.slow_workers import SlowWorker, check_slow_workers, measure_slowdowns
from tracetool.measure.stats import rate_stats
from tracetool.measure.sync_options import check_sync_options
from tracetool.measure.updates import update_fields
from tracetool.outputs import check_output_folder, output_folder

MEASURED_FILE = "measured.json"
SCHEMA = "tfsim.measured"
SCHEMA_VERSION = 1
TASK_PORT = 2222
# a run whose processes used more than this share of the machine's cores measured the CPU,
# not the network or the model
CPU_SATURATION_FRACTION = 0.85
# Cores the hypervisor may take from this virtual machine during a window before the point is
# flagged: a tenth of a 2-core machine. Measured here while idle: 0.04 to 0.08 cores; under
# another tenant's load up to 1.4, when one mlp worker at 200mbit fell from 1.21 to 0.62 steps/s.
STEAL_LIMIT_CORES = 0.2

TRACES_DIR = "traces"
STEP_TIMES_DIR = "step-times"  # one worker,step,seconds CSV per run
# Bounds that keep a run finite: an hour per window, and traced steps that fit on a disk
# (a traced step of the zoo's largest graph is 0.7 MB of RunMetadata and timeline).
MAX_DURATION_S = 3600.0
MAX_TRACED_STEPS = 1000


@dataclass(frozen=True)
class MeasureRequest:
    model: str
    batch_size: int
    workers: tuple[int, ...]
    out_dir: Path
    bandwidth_bps: float | None = None
    latency_s: float | None = None
    duration_s: float = 20.0
    # seconds every worker trains after the last is warm, before the window opens: behind a deep
    # buffer the first tens of seconds of contention run apart from where the link settles
    settle_s: float = MIN_SETTLE_S
    warmup_steps: int = 5
    optimizer: str = "sgd"
    intra_op_threads: int = 1
    inter_op_threads: int = 1
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    command_line: str = ""
    tcp_congestion_control: str = DEFAULT_TCP_CONGESTION_CONTROL
    queue: QueueSize = DEFAULT_QUEUE  # the shaped link's buffer (tracetool.cluster.topology.QueueSize)
    trace_steps: int = 0  # steps each worker traces after its window, with every worker still training
    repeats: int = 1  # independent clusters per worker count; their spread is the point's interval
    # more runs, one at a time up to max_repeats, while the runs' mean has a larger relative
    # standard error than this (tracetool.measure.repeats); None: exactly ``repeats`` runs
    max_standard_error: float | None = None
    max_repeats: int | None = None
    sync: str = "async"  # or "sync" / "backup": SyncReplicasOptimizer (tracetool.measure.sync_options)
    replicas_to_aggregate: int | None = None  # R; None: N for sync, N - 1 for backup
    slow_workers: tuple[SlowWorker, ...] = ()  # workers held to 1 / FACTOR of a core (tracetool.cluster.cpu_quota)

    def check(self) -> None:
        check_model_name(self.model)
        check_model_arguments(self.model, self.model_kwargs)
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            raise ToolError(f"--batch-size must be between 1 and {MAX_BATCH_SIZE}, got {self.batch_size}")
        if not self.workers or min(self.workers) < 1:
            raise ToolError("--workers must list worker counts of at least 1, e.g. 1,2,3,4")
        if not 2.0 <= self.duration_s <= MAX_DURATION_S:
            raise ToolError(f"--duration must be between 2 and {MAX_DURATION_S:g} seconds, got {self.duration_s:g}")
        if not MIN_SETTLE_S <= self.settle_s <= MAX_DURATION_S:
            raise ToolError(f"--settle must be between {MIN_SETTLE_S:g} and {MAX_DURATION_S:g} seconds, "
                            f"got {self.settle_s:g}")
        if self.warmup_steps < 0:
            raise ToolError("--warmup must be >= 0")
        if not 1 <= self.repeats <= MAX_REPEATS:
            raise ToolError(f"--repeats must be between 1 and {MAX_REPEATS}, got {self.repeats}")
        check_more_runs(self.repeats, self.max_repeats, self.max_standard_error)
        if not 0 <= self.trace_steps <= MAX_TRACED_STEPS:
            raise ToolError(f"--trace-steps must be between 0 and {MAX_TRACED_STEPS}, got {self.trace_steps}")
        if self.optimizer not in OPTIMIZERS:
            raise ToolError(f"unknown optimizer '{self.optimizer}'; choose one of {', '.join(OPTIMIZERS)}")
        if self.intra_op_threads < 1 or self.inter_op_threads < 1:
            raise ToolError("thread counts must be at least 1")
        check_sync_options(self.sync, self.replicas_to_aggregate, self.workers)
        check_slow_workers(self.slow_workers, self.workers)
        if self.bandwidth_bps:
            tcp_settings.check_tcp_congestion_control(self.tcp_congestion_control)
        elif self.queue != DEFAULT_QUEUE:
            raise ToolError("--queue sizes the shaped link's buffer; give --bandwidth too")
        check_cluster_fits(max(self.workers), "--workers")

    def task_spec(self, cluster: dict[str, list[str]], trace: bool = True) -> TaskSpec:
        """The tasks' instructions; ``trace=False`` skips the traced steps (repeats after the first)."""
        model = str(Path(self.model).resolve()) if self.model.endswith(".py") else self.model
        workers = len(cluster.get("worker", []))
        traced = self.trace_steps if trace else 0
        return TaskSpec(
            mode="measure", cluster=cluster, model=model, batch_size=self.batch_size, optimizer=self.optimizer,
            intra_op_threads=self.intra_op_threads, inter_op_threads=self.inter_op_threads,
            warmup_steps=self.warmup_steps, duration_s=self.duration_s, settle_s=self.settle_s,
            model_kwargs=self.model_kwargs,
            traced_steps=traced,
            out_dir=str(self.traces_dir(workers)) if traced else "",
            sync=self.sync, replicas_to_aggregate=self.replicas_to_aggregate,
        )

    def traces_dir(self, workers: int) -> Path:
        """Where the traced steps of the run with ``workers`` workers go (one folder per worker inside)."""
        return self.out_dir.resolve() / TRACES_DIR / f"workers-{workers}"


def parse_worker_counts(text: str) -> tuple[int, ...]:
    """``1,2,4`` or ``1-4`` (or a mix) to sorted distinct counts."""
    counts: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        try:
            bounds = (int(lo), int(hi)) if dash else (int(part), int(part))
        except ValueError:
            raise ToolError(f"bad --workers '{text}': give counts like 1,2,3,4 or 1-4") from None
        check_cluster_fits(max(bounds), "--workers")  # before a huge range is spelled out
        counts.update(range(bounds[0], bounds[1] + 1))
    if not counts or min(counts) < 1:
        raise ToolError(f"bad --workers '{text}': every worker count must be at least 1")
    return tuple(sorted(counts))


# ---------------------------------------------------------------- CPU accounting

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process (all its threads), from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime (fields 14, 15)


def machine_cpu_s() -> tuple[float, float]:
    """CPU seconds all cores spent busy (outside idle and iowait) and stolen since boot, from /proc/stat.

    Steal is time a virtual machine's cores wanted to run but the hypervisor ran someone else:
    on a shared host it comes and goes, and while it lasts every step runs slower. It counts
    as busy, and is reported on its own so a slow point can be told from a slow model."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(v) for v in first]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    steal = ticks[7] if len(ticks) > 7 else 0
    return (sum(ticks[:8]) - idle) / _CLOCK_TICKS, steal / _CLOCK_TICKS


@dataclass
class CpuSnapshot:
    wall_s: float
    process_s: dict[str, float]
    machine_busy_s: float
    machine_steal_s: float = 0.0

    @staticmethod
    def take(pids: dict[str, int]) -> CpuSnapshot:
        values = {name: process_cpu_s(pid) for name, pid in pids.items()}
        busy, steal = machine_cpu_s()
        return CpuSnapshot(time.monotonic(), {k: v for k, v in values.items() if v is not None}, busy, steal)


def cpu_use(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, Any]:
    """Cores used by each process, all of them and the whole machine between two snapshots."""
    wall = after.wall_s - before.wall_s
    cores = {name: (after.process_s[name] - before.process_s[name]) / wall
             for name in before.process_s if name in after.process_s}
    total = sum(cores.values())
    machine = (after.machine_busy_s - before.machine_busy_s) / wall
    steal = (after.machine_steal_s - before.machine_steal_s) / wall
    cpu_count = os.cpu_count() or 1
    limit = CPU_SATURATION_FRACTION * cpu_count
    stolen = steal > STEAL_LIMIT_CORES
    return {
        "window_s": wall,
        "process_cores": cores,
        "tasks_total_cores": total,
        "machine_busy_cores": machine,
        "steal_cores": steal,
        "machine_cores": cpu_count,
        "saturated": total > limit or machine > limit or stolen,
        "saturated_by_other_processes": (machine > limit or stolen) and total <= limit,
        "stolen_by_hypervisor": stolen,
    }


# ---------------------------------------------------------------- turning counts into a point

def build_point(result: dict[str, Any], batch_size: int, cpu: dict[str, Any] | None) -> dict[str, Any]:
    """One measured point from the chief's ``cluster_result`` and the CPU use around the window."""
    counts: list[list[float]] = result["bin_counts"]
    bin_s: float = result["bin_s"]
    totals = [sum(row[b] for row in counts) / bin_s for b in range(result["bins"])]
    overall = rate_stats(totals)
    per_worker = []
    for index, row in enumerate(counts):
        stats = rate_stats([c / bin_s for c in row])
        entry: dict[str, Any] = {
            "task_index": index,
            "steps_per_second": stats["mean"],
            "steps_per_second_std": stats["std"],
            "steps_in_window": sum(row),
            "mean_step_time_s": result["mean_step_time_s"][index],
            "cpu_cores_self_reported": result["cpu_s"][index] / result["duration_s"],
        }
        if cpu is not None:
            entry["cpu_cores"] = cpu["process_cores"].get(f"worker{index}")
        per_worker.append(entry)
    point: dict[str, Any] = {
        "workers": result["workers"],
        "steps_per_second": overall["mean"],
        "examples_per_second": overall["mean"] * batch_size,
        "steps_per_second_std": overall["std"],
        "steps_per_second_ci95": overall["ci95"],
        "window_s": result["duration_s"],
        "bins": result["bins"],
        "bin_s": bin_s,
        "bin_steps_per_second": totals,
        "per_worker": per_worker,
        **update_fields(result, overall["mean"], overall["std"], overall["ci95"]),
    }
    if cpu is not None:
        point["cpu"] = cpu
        point["cpu_saturated"] = cpu["saturated"]
    else:
        point["cpu_saturated"] = False
    return point


def describe_point(point: dict[str, Any]) -> str:
    runs = point.get("run_steps_per_second", [])
    over = (f" over {len(runs)} runs (" + " ".join(f"{r:.2f}" for r in runs) + ")") if len(runs) > 1 else ""
    if point.get("runs_left_out"):
        over += f"; {len(point['runs_left_out'])} run(s) disturbed from outside left out"
    line = (f"{point['workers']} worker(s): {point['steps_per_second']:.2f} steps/s "
            f"+-{point['steps_per_second_ci95']:.2f} (95% CI{over}), {point['examples_per_second']:.0f} examples/s; "
            f"per worker " + " ".join(f"{w['steps_per_second']:.2f}" for w in point["per_worker"]))
    cpu = point.get("cpu")
    if cpu:
        line += (f"; CPU {cpu['tasks_total_cores']:.2f} of {cpu['machine_cores']} cores "
                 f"(PS {cpu['process_cores'].get('ps', math.nan):.2f}, machine {cpu['machine_busy_cores']:.2f})")
        link = point.get("link")
        if link:
            line += (f"; link used {link['download']['utilization']:.0%} down, {link['upload']['utilization']:.0%} up"
                     f" ({link['download']['drops'] + link['upload']['drops']} drops)")
        if cpu.get("stolen_by_hypervisor"):
            line += (f"  CPU STOLEN by the hypervisor ({cpu['steal_cores']:.2f} cores): this point measures the "
                     "host's other tenants, not the link")
        elif cpu["saturated"]:
            who = "other processes" if cpu["saturated_by_other_processes"] else "the cluster"
            line += f"  CPU SATURATED by {who}: this point measures the CPU, not the link"
    return line


# ---------------------------------------------------------------- running clusters

def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Unwind through cleanup on SIGTERM for the whole run, not only while processes are up."""
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class ShapedCluster(LocalCluster):
    """A ``LocalCluster`` whose tasks each run in their own namespace of a ``ShapedTopology``."""

    def __init__(self, topology: ShapedTopology, workers: int) -> None:
        if workers > topology.workers:
            raise ToolError(f"the topology has room for {topology.workers} workers, not {workers}")
        super().__init__(workers=workers, isolate=False)
        self.topology = topology

    def cluster_addresses(self) -> dict[str, list[str]]:
        return {
            "ps": [f"{self.topology.ps.address}:{TASK_PORT}"],
            "worker": [f"{t.address}:{TASK_PORT}" for t in self.topology.worker_tasks[: self.workers]],
        }

    def __enter__(self) -> ShapedCluster:
        self.group.__enter__()  # the topology cleaned up after killed runs when it was built
        return self

    def in_network(self, job: str, index: int, argv: list[str]) -> list[str]:
        return self.topology.command_in(job, index, argv)


ProgressFn = Callable[[str], None]


def _task_pids(cluster: LocalCluster) -> dict[str, int]:
    pids = {}
    for task in cluster.group.tasks:
        name = "ps" if task.name == "the PS task" else "worker" + task.name.split()[-1]
        pids[name] = task.popen.pid  # nsenter execs the task: this is the Python process itself
    return pids


def link_use(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], wall_s: float,
             bandwidth_bps: float) -> dict[str, dict[str, float]]:
    """What the shaped qdiscs carried in the window: rate, share of the shaped rate, drops."""
    use = {}
    for direction in before:
        sent = after[direction]["bytes"] - before[direction]["bytes"]
        use[direction] = {
            "bytes": sent,
            "bits_per_second": 8 * sent / wall_s,
            "utilization": 8 * sent / wall_s / bandwidth_bps,
            "packets": after[direction]["packets"] - before[direction]["packets"],
            "drops": after[direction]["drops"] - before[direction]["drops"],
        }
    return use


def watch_measurement(
    cluster: LocalCluster, timeout_s: float, progress: ProgressFn, topology: ShapedTopology | None = None
) -> tuple[dict, dict | None, dict[int, list], dict | None]:
    """Follow the workers' events; snapshot CPU (and the shaped link's counters) at the window's edges.

    Returns the chief's result, the CPU use, each worker's step spans (by task index) and the
    link's use in the window (None when unshaped). The result gains ``settled_s``: how long after
    the last worker reported itself warm the window opened, by the workers' own clocks (their
    events come over separate pipes, so the chief's window may be read before the last warm).
    """
    result: dict[str, Any] | None = None
    spans: dict[int, list] = {}
    link_before: dict[str, dict[str, int]] | None = None
    link: dict[str, Any] | None = None
    before: CpuSnapshot | None = None
    cpu: dict[str, Any] | None = None
    warm = 0
    all_warm_at: float | None = None
    settled_s: float | None = None
    last_warm_unix_s = 0.0
    window: dict[str, Any] | None = None
    for name, event in cluster.worker_events(timeout_s):
        kind = event["event"]
        if kind == "window_ended":
            spans[int(name.split()[-1])] = event.get("step_spans_s", [])
        if kind == "phase" and event["phase"] == "warm":
            warm += 1
            progress(f"  {warm}/{cluster.workers} workers warm")
            # the worker's own clock: its event may reach us after the chief's window event
            last_warm_unix_s = max(last_warm_unix_s, float(event.get("unix_s", time.time())))
            if warm == cluster.workers:
                all_warm_at = last_warm_unix_s
                if window is not None:
                    settled_s = _announce_window(window, all_warm_at, progress)
        elif kind == "window" and window is None:
            window = event
            if all_warm_at is not None:
                settled_s = _announce_window(window, all_warm_at, progress)
        elif kind == "window_started" and before is None:
            before = CpuSnapshot.take(_task_pids(cluster))
            link_before = topology.link_counters() if topology else None
        elif kind == "window_ended" and before is not None and cpu is None:
            cpu = cpu_use(before, CpuSnapshot.take(_task_pids(cluster)))
            if topology is not None and link_before is not None and topology.bandwidth_bps:
                link = link_use(link_before, topology.link_counters(), cpu["window_s"], topology.bandwidth_bps)
        elif kind == "cluster_result":
            result = event
    if result is None:
        raise ToolError("the chief worker ended without reporting the cluster's step counts")
    if window is not None and settled_s is None:
        _announce_window(window, None, progress)
    return {**result, "settled_s": settled_s}, cpu, spans, link


def _announce_window(window: dict[str, Any], all_warm_at: float | None, progress: Any) -> float | None:
    """Say when the chief's window opened, and how long after the last worker was warm (returned)."""
    start = time.strftime("%H:%M:%S", time.localtime(window["window_start_unix_s"]))
    length_s = window["window_end_unix_s"] - window["window_start_unix_s"]
    settled_s = None if all_warm_at is None else window["window_start_unix_s"] - all_warm_at
    after = f", {settled_s:.0f} s after the last worker was warm" if settled_s is not None else ""
    progress(f"  measuring from {start} for {length_s:.0f} s{after}")
    return settled_s


def measure_point(request: MeasureRequest, workers: int, topology: ShapedTopology | None, progress: ProgressFn,
                  trace: bool = True, quotas: dict[int, CpuQuota] | None = None) -> dict[str, Any]:
    """One run: a fresh cluster of ``workers`` workers, measured over one window; the workers in
    ``quotas`` (by task index) run under their CPU quota."""
    cluster: LocalCluster = ShapedCluster(topology, workers) if topology else LocalCluster(workers=workers)
    timeout_s = max(180.0, 2 * (request.duration_s + request.settle_s) + 120.0)
    with cluster:
        spec = request.task_spec(cluster.cluster_addresses(), trace)
        cluster.start(spec)
        for index, quota in (quotas or {}).items():
            # moved while TensorFlow still imports: every thread it starts later is under the quota
            quota.add(cluster.worker_tasks[index].popen.pid)
        progress(f"  started 1 PS and {workers} worker process(es)")
        result, cpu, spans, link = watch_measurement(cluster, timeout_s, progress, topology)
    point = build_point(result, request.batch_size, cpu)
    if result.get("settled_s") is not None:
        point["settled_s"] = result["settled_s"]
    if result.get("window_start_unix_s") is not None:
        point["window_start_unix_s"] = result["window_start_unix_s"]  # to align samples taken beside the run
    if link is not None:
        point["link"] = link
    for entry in point["per_worker"]:
        entry["step_spans_s"] = spans.get(entry["task_index"], [])
    if request.trace_steps and trace:
        point["traces"] = str(request.traces_dir(workers).relative_to(request.out_dir.resolve()))
    return point


def _cpu_quotas(request: MeasureRequest, stack: ExitStack) -> dict[int, CpuQuota]:
    """One cgroup per slowed worker for the whole measurement, removed when ``stack`` closes."""
    if not request.slow_workers:
        return {}
    controller = require_cpu_controller()
    return {s.task_index: stack.enter_context(CpuQuota(controller, f"w{s.task_index}", s.factor))
            for s in request.slow_workers}


def _document_head(request: MeasureRequest) -> dict[str, Any]:
    """The first fields of measured.json: what was measured, local or on real hosts."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "model": request.model,
        "batch_size": request.batch_size,
        "optimizer": request.optimizer,
        "model_kwargs": request.model_kwargs,
        "bandwidth_bps": request.bandwidth_bps,
        "latency_s": request.latency_s,
        "latency_emulated": False,
        "sync": request.sync,
        "replicas_to_aggregate": request.replicas_to_aggregate,
    }


def write_step_times_csv(path: Path, point: dict[str, Any]) -> None:
    """Every worker's step times in the window as ``worker,step,seconds`` rows: what
    ``replay predict --slowdown trace:FILE`` replays to make its workers as unequal as these were."""
    rows = ["worker,step,seconds"]
    for entry in point["per_worker"]:
        rows += [f"{entry['task_index']},{k},{duration:.4f}" for k, (_, duration) in enumerate(entry["step_spans_s"])
                 if duration > 0]
    write_text_atomically(path, "\n".join(rows) + "\n")


def latency_note(request: MeasureRequest) -> str | None:
    if request.latency_s is None:
        return None
    why = "this kernel has no netem qdisc" if not netem_available() else "only bandwidth is shaped"
    return (f"latency {request.latency_s * 1e3:g} ms is NOT emulated on the measured links ({why}); "
            "it is recorded as a simulator parameter only")


def run_measure(request: MeasureRequest, progress: ProgressFn | None = None) -> Path:
    """Measure every worker count; return the path of ``measured.json``."""
    return run_measures([request], progress)[0]


@dataclass
class _Measured:
    """One of the models ``run_measures`` alternates: its request (out_dir: its staging folder),
    how its lines are told apart in the log, and what it has measured so far."""

    request: MeasureRequest
    say: ProgressFn
    name: str  # how the log names it to the others: its label, or its model
    quotas: dict[int, CpuQuota]
    slowdowns: list[dict[str, Any]]
    points: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)  # the current worker count's


def _check_same_link(requests: Sequence[MeasureRequest]) -> None:
    """Runs that alternate share one shaped link."""
    first = requests[0]
    for other in requests[1:]:
        if ((other.bandwidth_bps, other.tcp_congestion_control, other.queue)
                != (first.bandwidth_bps, first.tcp_congestion_control, first.queue)):
            raise ValueError("alternating measurements need the same link")
    if sum(1 for r in requests if r.slow_workers) > 1:
        raise ValueError("only one of the alternating measurements may slow its workers")


# Given each measurement's runs of one count so far, why all of them should run again, or None.
Agreement = Callable[[list[list[dict[str, Any]]]], "str | None"]


def run_measures(requests: Sequence[MeasureRequest], progress: ProgressFn | None = None,
                 labels: Sequence[str] = (), agreement: Agreement | None = None) -> list[Path]:
    """Measure several models on one shaped link, their runs of each worker count they share
    taking turns; return each one's ``measured.json``.

    Why take turns: validate fits the replay to a TensorFlow probe's runs and compares it with
    the model's; measured one after the other, hours apart, a point drifted between them (vgg at
    25mbit behind BBR, two workers: 0.75 to 0.89 steps/s one day, 0.92 to 0.97 the next) and the
    prediction was off by the drift. Taking turns run by run, and giving every model another run
    of a count while any of them wants one (``repeats.runs_this_round``), both means cover the
    same minutes. ``labels`` prefix each model's log lines (none for the first); ``agreement``
    may ask for more runs of a count that all of them share (``repeats.twins_disagree``)."""
    for request in requests:
        request.check()
        require_collector(request.model)
        check_output_folder(request.out_dir)
    _check_same_link(requests)
    netns.require_namespaces()
    if any(r.slow_workers for r in requests):
        require_cpu_controller()
    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    first = requests[0]
    note = latency_note(first)
    if note:
        say(f"warning: {note}")
    network = (f"per-task namespaces on a bridge, PS link shaped to {format_bandwidth(first.bandwidth_bps)} "
               f"both ways (tbf, {first.queue.describe()} queue), TCP {first.tcp_congestion_control}"
               if first.bandwidth_bps else "one loopback-only namespace, unshaped")
    say(f"measuring {describe_plan(requests)}")
    started = time.monotonic()
    shaping: dict[str, Any] | None = None
    with interrupt_on_sigterm(), ExitStack() as held:
        measured = []
        for index, request in enumerate(requests):
            label = labels[index] if index < len(labels) else ""
            arm_say = (lambda text, label=label: say(f"  {label}: {text}")) if label else say
            staging = held.enter_context(output_folder(Path(os.path.abspath(request.out_dir)), "tracetool measure"))
            request = replace(request, out_dir=staging)  # traced steps go into the staging folder too
            quotas = _cpu_quotas(request, held)
            slowdowns = (measure_slowdowns(request.task_spec({"ps": [], "worker": []}, trace=False),
                                           request.slow_workers, quotas, arm_say) if quotas else [])
            measured.append(_Measured(request, arm_say, label or model_label(request.model), quotas, slowdowns))
        largest = max(n for r in requests for n in r.workers)
        topology = (ShapedTopology(largest, first.bandwidth_bps, first.tcp_congestion_control, first.queue)
                    if first.bandwidth_bps else None)
        try:
            if topology is not None:
                topology.__enter__()
                shaping = topology.shaping_facts()
            for workers in dict.fromkeys(n for r in requests for n in r.workers):
                _measure_count([a for a in measured if workers in a.request.workers], workers, topology, network,
                               agreement if all(workers in r.workers for r in requests) else None)
        finally:
            if topology is not None:
                topology.__exit__(None, None, None)
        documents = []
        for arm in measured:
            document = _measured_document(arm, network, shaping, note, started)
            write_json_atomically(arm.request.out_dir / MEASURED_FILE, document)
            documents.append(document)
    for arm, document in zip(measured, documents, strict=True):
        if document["cpu_saturated"]:
            saturated = [str(p["workers"]) for p in arm.points if p["cpu_saturated"]]
            arm.say(f"warning: CPU saturated at {', '.join(saturated)} worker(s); those points measure this "
                    "machine's CPU, not the PS link (cpu_saturated in the file)")
    return [Path(os.path.abspath(r.out_dir)) / MEASURED_FILE for r in requests]


def _measure_count(measured: list[_Measured], workers: int, topology: ShapedTopology | None, network: str,
                   agreement: Agreement | None = None) -> None:
    """Every model's runs of one worker count, taking turns, folded into one point each."""
    for arm in measured:
        arm.runs = []
    disagreement = None if agreement is None else (lambda: agreement([a.runs for a in measured]))
    while True:
        due = runs_this_round([(a.request.repeats, a.runs, a.request.max_repeats, a.request.max_standard_error)
                               for a in measured], disagreement)
        if all(reason is None for reason in due):
            break
        wanting = [a.name for a, reason in zip(measured, due, strict=True) if reason not in (None, ALONGSIDE)]
        for arm, reason in zip(measured, due, strict=True):
            if reason == ALONGSIDE:
                reason = f"taking turns with the extra run of {', '.join(wanting)}"
            if reason is not None:
                _measure_run(arm, workers, topology, network, reason)
    for arm in measured:
        point = combine_runs(arm.runs, arm.request.batch_size)
        arm.points.append(point)
        arm.say(describe_point(point))


def _measure_run(arm: _Measured, workers: int, topology: ShapedTopology | None, network: str,
                 reason: str) -> None:
    """One more run of ``workers`` for ``arm``; ``reason`` says why a run past its repeats was started."""
    request, run = arm.request, len(arm.runs)
    of = f", run {run + 1} of {request.repeats}" if request.repeats > 1 else ""
    if run >= request.repeats:
        of = f", extra run {run + 1 - request.repeats} ({reason})"
    arm.say(f"{model_label(request.model)}: {workers} worker(s){of}, {network}")
    arm.runs.append(measure_point(request, workers, topology, arm.say, trace=run == 0, quotas=arm.quotas))
    write_step_times_csv(request.out_dir / STEP_TIMES_DIR / f"workers-{workers}-run-{run + 1}.csv", arm.runs[-1])
    if request.repeats > 1 or len(arm.runs) > 1:
        arm.say("  " + describe_point(arm.runs[-1]))


def _measured_document(arm: _Measured, network: str, shaping: dict[str, Any] | None, note: str | None,
                       started: float) -> dict[str, Any]:
    """measured.json of one model: what was asked, the link, and one point per worker count."""
    request = arm.request
    return {
        **_document_head(request),
        "network": network,
        "shaping": shaping,
        "duration_s": request.duration_s,
        "settle_s": request.settle_s,
        "repeats": request.repeats,
        "max_repeats": request.max_repeats,
        "max_standard_error": request.max_standard_error,
        "warmup_steps": request.warmup_steps,
        "intra_op_threads": request.intra_op_threads,
        "inter_op_threads": request.inter_op_threads,
        "cpu_saturated": any(p["cpu_saturated"] for p in arm.points),
        "cpu_saturation_threshold_cores": CPU_SATURATION_FRACTION * (os.cpu_count() or 1),
        "points": arm.points,
        "slow_workers": arm.slowdowns,
        "notes": [n for n in [note] if n],
        **machine_facts(),
        "measure_wall_time_s": time.monotonic() - started,
        "command_line": request.command_line,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _read_json_file(path: Path, what: str, expected: str) -> Any:
    """Parse a JSON input; a missing, unreadable, binary or malformed file is one line naming it."""
    path = Path(path)
    if not path.is_file():
        raise ToolError(f"{what} {path} {'is a folder' if path.is_dir() else 'does not exist'}; give {expected}")
    try:
        return json.loads(path.read_bytes())
    except OSError as exc:
        raise ToolError(f"cannot read {what} {path} ({exc.strerror}); give {expected}") from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError (a binary file) alike
        raise ToolError(f"{what} {path} is not JSON; give {expected}") from None


def load_measured(path: Path) -> dict[str, Any]:
    data = _read_json_file(path, "measurements", "a measured.json written by 'tracetool measure'")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("schema_version") != SCHEMA_VERSION:
        raise ToolError(f"{path} is not a {SCHEMA} version {SCHEMA_VERSION} file; give a measured.json written by "
                        "'tracetool measure'")
    if not isinstance(data.get("points"), list) or not all(isinstance(p, dict) for p in data["points"]):
        raise ToolError(f"{path} is a damaged measured.json (its points are not a list of objects); measure again")
    try:
        # Repeated points are folded again from their runs, so every reader applies the same rules.
        data["points"] = [combine_runs(p["runs"], data["batch_size"]) if len(p.get("runs", [])) > 1 else p
                          for p in data["points"]]
        for point in data["points"]:
            int(point["workers"]), float(point["steps_per_second"]), float(point["steps_per_second_ci95"])
        str(data["model"]), int(data["batch_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ToolError(f"{path} is a damaged measured.json ({type(exc).__name__}: {exc}); measure again") from None
    return data


# ---------------------------------------------------------------- real hosts

def load_cluster_file(path: Path) -> dict[str, list[str]]:
    """``{"ps": ["host:port"], "worker": ["host:port", ...]}``, as in TF_CONFIG's cluster."""
    data = _read_json_file(path, "cluster file", 'a JSON file {"ps": ["host:port"], "worker": ["host:port", ...]}')
    cluster = data.get("cluster", data) if isinstance(data, dict) else None
    if not isinstance(cluster, dict) or not all(isinstance(cluster.get(job), list) and cluster[job]
                                                for job in ("ps", "worker")):
        raise ToolError(f"cluster file {path} needs 'ps' and 'worker' lists of host:port addresses")
    if len(cluster["ps"]) != 1:
        raise ToolError(f"cluster file {path}: exactly one PS address is supported, got {len(cluster['ps'])}")
    return {"ps": [str(a) for a in cluster["ps"]], "worker": [str(a) for a in cluster["worker"]]}


def measure_on_host(request: MeasureRequest, cluster_path: Path, job: str, task_index: int,
                    progress: ProgressFn | None = None) -> Path | None:
    """Run this host's task of a real multi-host cluster; the chief writes ``measured.json``.

    The PS task serves until it is stopped (Ctrl-C). Workers run ``measure_worker`` exactly as
    in a local measurement; each reads its own process's CPU time around the window.
    """
    request.check()
    if request.slow_workers:
        raise ToolError("--slow-worker slows a worker of a local cluster; on real hosts limit the host itself")
    cluster = load_cluster_file(cluster_path)
    if task_index == 0 and job == "worker":
        check_output_folder(request.out_dir)
    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    if job not in ("ps", "worker"):
        raise ToolError(f"--job must be ps or worker, got '{job}'")
    if not 0 <= task_index < len(cluster[job]):
        raise ToolError(f"--task-index {task_index} is outside the {len(cluster[job])} {job} address(es)")
    spec = request.task_spec(cluster)
    spec_folder = tempfile.TemporaryDirectory(prefix=leftovers.spec_folder_prefix())
    with spec_folder as tmp, interrupt_on_sigterm(), TaskGroup() as group:
        spec_path = Path(tmp) / "spec.json"
        spec.save(spec_path)
        task = group.start(f"{job} task {task_index}", python_module_argv(
            "tracetool.tf_task", "--spec", str(spec_path), "--job", job, "--task-index", str(task_index)))
        if job == "ps":
            say(f"PS serving at {cluster['ps'][0]}; stop it with Ctrl-C when the chief has written its file")
            assert task.popen.stdout is not None
            for _ in task.popen.stdout:
                pass
            code = task.popen.wait()
            raise ToolError(f"the PS task exited with code {code}: {task.last_error_line()}")
        result: dict[str, Any] | None = None
        before: CpuSnapshot | None = None
        cpu = None
        assert task.popen.stdout is not None
        for line in task.popen.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            kind = event["event"]
            if kind == "phase":
                say(f"  {event['phase']}")
            elif kind == "window_started":
                before = CpuSnapshot.take({f"worker{task_index}": task.popen.pid})
            elif kind == "window_ended" and before is not None:
                cpu = cpu_use(before, CpuSnapshot.take({f"worker{task_index}": task.popen.pid}))
                say(f"  window closed: {event['steps']:.1f} steps by this worker")
            elif kind == "cluster_result":
                result = event
        code = task.popen.wait()
        if code != 0:
            raise ToolError(f"worker task {task_index} exited with code {code}: {task.last_error_line()}")
    if task_index != 0:
        say("done; the chief (worker 0) writes the cluster's measured.json")
        return None
    if result is None:
        raise ToolError("the chief ended without the cluster's step counts")
    point = build_point(result, request.batch_size, None)
    point["cpu_this_host"] = cpu
    say(describe_point(point))
    document = {
        **_document_head(request),
        "network": f"real hosts from {cluster_path}",
        "cluster": cluster,
        "duration_s": request.duration_s,
        "settle_s": request.settle_s,
        "repeats": request.repeats,
        "warmup_steps": request.warmup_steps,
        "cpu_saturated": point["cpu_saturated"],
        "points": [point],
        "notes": ["worker CPU is self-reported per worker (cpu_cores_self_reported); the PS host's CPU is not known "
                  "to the chief"],
        **machine_facts(),
        "command_line": request.command_line,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out_dir = Path(os.path.abspath(request.out_dir))
    with output_folder(out_dir, "tracetool measure") as staging:
        write_json_atomically(staging / MEASURED_FILE, document)
    return out_dir / MEASURED_FILE


def netem_available() -> bool:
    """Whether this kernel can delay packets (it decides if ``--latency`` could ever be emulated)."""
    name = netns.new_namespace_name("probe")
    try:
        netns.create_namespace(name)
        result = subprocess.run(["tc", "-n", name, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                                capture_output=True, text=True)
        return result.returncode == 0
    finally:
        netns.delete_namespace(name)

