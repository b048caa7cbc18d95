"""When, in the profiled step, each downloaded tensor is first needed and each gradient leaves.

Why: validate's TensorFlow probe is fitted as the model's twin on the link, and a twin that waits
for every download and then sleeps its compute in one piece is not one. Behind a 100 ms buffer
with CUBIC, inception at 25mbit ran two workers at 3.91 steps/s (eight runs) where that probe ran
4.47: the model's forward pass runs layer by layer as its tensors arrive, so how much compute is
left after the last download depends on which tensor came last, and two workers drift out of the
pipeline where each downloads while the other uploads. Probes of the same tensors, two workers
each (steps/s per run):

- gradients leaving at the model's backward-pass times, the compute a sleep after every download:
  4.44 to 4.59 (seven runs), as fast as the one-piece probe, and with busy CPU instead of a sleep
  4.48 to 4.52 (four);
- the same with the forward pass in layers, each waiting for its own tensors: 3.71 to 4.34
  (thirteen runs with sleeps or CPU work, mean 4.01), near the model's rate.

This module's twin of that step ran 4.19 over thirteen runs (docs/network-probe.md, "The probe
copies the model's schedule").

So the probe copies the step's schedule, not only its bytes: ``probe_schedule`` reads from the
step graph the stages of the worker's compute, which downloads each stage waits for (the first
compute op that reads the tensor), how long each stage computes (the busy time of the worker's
compute ops between them), and after which stage each gradient is sent (the start of its upload
in the profile). ``tracetool.measure.probe_model.build_twin_probe_loss`` builds it in TensorFlow.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from tracetool.errors import ToolError

# Events closer than this share a stage: a sleep of less is below what the probe can time.
MIN_STAGE_US = 500.0
# At most this many stages, so that per-stage overheads (a Python call each) stay small.
MAX_STAGES = 48


@dataclass(frozen=True)
class ProbeSchedule:
    """The probe's step, one tensor per download (``tensor_bytes``). Stage ``k`` waits for the
    previous stage and for the tensors whose ``gate_stage`` is ``k``, then computes
    ``stage_compute_s[k]``; a tensor's gradient leaves once ``release_after`` stages are done
    (0: only ``before_s``, the compute that needs no download and runs from the step's start,
    beside the downloads, as an input pipeline does)."""

    tensor_bytes: tuple[int, ...]
    gate_stage: tuple[int, ...]
    release_after: tuple[int, ...]
    stage_compute_s: tuple[float, ...]
    before_s: float

    @property
    def compute_s(self) -> float:
        return self.before_s + sum(self.stage_compute_s)


def probe_schedule(graph: Any, compute_scale: float = 1.0) -> ProbeSchedule:
    """The schedule of ``graph`` (a StepGraph): a stage starts at each moment of the profiled
    step where the compute first reads a downloaded tensor or a gradient leaves (moments closer
    than ``MIN_STAGE_US`` taken together), and computes the worker's busy time until the next,
    times ``compute_scale``.

    The scale is the replay's calibration (``replay.calibrate_compute_scale``): tracing stretches
    some ops, and the replay of the model shrinks them so that one worker takes the untraced step
    time; the twin must compute what the model computes, not what its trace did. resnet's trace on
    an AMD EPYC stretched its compute by 1.6 (scale 0.626): the unscaled twin stepped alone at
    2.55 steps/s on the link where the model ran 3.70, and a fit to its contended rates put the
    link's reverse efficiency at 0.51, predicting two workers 23% below the model's runs."""
    if not compute_scale >= 0.0:
        raise ValueError(f"compute_scale must be at least 0, got {compute_scale}")
    nodes = graph.nodes
    consumers: dict[int, list[int]] = defaultdict(list)
    for edge in graph.edges:
        consumers[edge.src].append(edge.dst)
    downloads = probe_tensors(graph)
    first_use = [_first_compute_use(i, consumers, nodes) for i in downloads]
    releases = _release_times(graph, downloads)
    # a tensor no compute reads still holds back the gradients, as before any model's backward pass
    gates = [use if use is not None else min(releases) for use in first_use]
    moments = _stage_moments(sorted(set(gates) | set(releases)))

    def stage_at(t: float) -> int:
        """The stage whose start ``t`` was merged into."""
        return next(k for k, start in enumerate(moments) if t <= start)

    busy = _busy_intervals([n for n in nodes if n.kind == "compute"])
    # the first stage also computes what ran between the first read and its (merged) start
    starts = [min(gates)] + moments[1:]
    ends = moments[1:] + [moments[-1]]
    return ProbeSchedule(
        tensor_bytes=tuple(nodes[i].bytes for i in downloads),
        gate_stage=tuple(stage_at(t) for t in gates),
        release_after=tuple(stage_at(t) for t in releases),
        stage_compute_s=tuple(compute_scale * _busy_between(busy, a, b) / 1e6
                              for a, b in zip(starts, ends, strict=True)),
        before_s=compute_scale * _busy_between(busy, 0.0, min(gates)) / 1e6)


def probe_tensors(graph: Any) -> list[int]:
    """The step's downloads, the probe's tensors; a step without any has nothing to probe."""
    downloads = graph.node_ids_of_kind("download")
    if not downloads:
        raise ToolError("the step graph has no downloads, so the probe has no tensors to move; "
                        "profile the model with its PS (tracetool profile) and build the graph again")
    return downloads


def _first_compute_use(node_id: int, consumers: dict[int, list[int]], nodes: list[Any]) -> float | None:
    starts = [nodes[c].start_offset_us for c in consumers[node_id] if nodes[c].kind == "compute"]
    return min(starts) if starts else None


def release_order(graph: Any, downloads: list[int], skip: frozenset[int] = frozenset()) -> list[int | None]:
    """The upload that carries each download tensor's gradient: the profile's uploads but
    ``skip``, matched to tensors of the same size in the order they started (any tensor of a size
    is the same to the link); None for a tensor no upload matches (a resource handle, a sparse
    update's other shape)."""
    uploads = sorted((graph.nodes[i].start_offset_us, i) for i in graph.node_ids_of_kind("upload"))
    if not uploads:
        raise ToolError("the step graph has no uploads, so the probe has no gradients to send; "
                        "profile the model with its PS (tracetool profile) and build the graph again")
    waiting: dict[int, list[int]] = defaultdict(list)
    for position, node_id in enumerate(downloads):
        waiting[graph.nodes[node_id].bytes].append(position)
    matched: list[int | None] = [None] * len(downloads)
    for _, upload in uploads:
        size = graph.nodes[upload].bytes
        if upload not in skip and waiting.get(size):
            matched[waiting[size].pop(0)] = upload
    return matched


def _release_times(graph: Any, downloads: list[int]) -> list[float]:
    """When each download tensor's gradient leaves (``release_order``); a tensor no upload
    matches leaves with the last gradient."""
    matched = release_order(graph, downloads)
    last = max(graph.nodes[i].start_offset_us for i in graph.node_ids_of_kind("upload"))
    return [last if u is None else graph.nodes[u].start_offset_us for u in matched]


def _stage_moments(events: list[float]) -> list[float]:
    """The stages' starts: events less than ``MIN_STAGE_US`` (or the span over ``MAX_STAGES``)
    after a group's first are taken with it, at the group's last event, so that a tensor is never
    needed and a gradient never leaves earlier than the model needed or sent it."""
    step = max(MIN_STAGE_US, (events[-1] - events[0]) / MAX_STAGES)
    starts: list[float] = []
    group_first = None
    for t in events:
        if group_first is None or t - group_first >= step:
            starts.append(t)
            group_first = t
        else:
            starts[-1] = t
    return starts


def _busy_intervals(computes: list[Any]) -> list[tuple[float, float]]:
    """The union of the worker compute ops' intervals, each from its scheduling gap on: a stage's
    compute is the time the worker computed or scheduled ops (257 ops of inception: 44.3 ms of
    compute and 6.7 ms of gaps), not the time it waited for a transfer."""
    spans = sorted((n.start_offset_us - n.gap_us, n.start_offset_us + n.duration.mean_us) for n in computes)
    merged: list[tuple[float, float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _busy_between(busy: list[tuple[float, float]], a: float, b: float) -> float:
    return sum(max(0.0, min(end, b) - max(start, a)) for start, end in busy)
