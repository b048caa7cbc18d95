"""``tracetool show``: what a step graph says, in a screenful."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import networkx as nx

from tracetool.graph.stepgraph import COMPUTE, DOWNLOAD, PS_COMPUTE, STEP_END, STEP_START, UPLOAD, StepGraph


@dataclass(frozen=True)
class GraphSummary:
    model: str
    counts_by_kind: dict[str, int]
    download_bytes: int
    upload_bytes: int
    critical_path_compute_us: float
    critical_path_us: float
    total_transfer_us: float
    total_compute_us: float
    untraced_step_time_s: float | None
    top_ops: list[tuple[str, str, float]]  # (kind, name, mean duration us)
    extra_tensors: list[dict]


def critical_path(graph: StepGraph) -> tuple[float, list[int]]:
    """Longest path by mean duration (transfers at their measured time), ignoring lane contention."""
    g = graph.to_networkx()
    weights = {n.id: n.duration.mean_us for n in graph.nodes}
    finish: dict[int, float] = {}
    best_pred: dict[int, int | None] = {}
    for node in nx.topological_sort(g):
        preds = list(g.predecessors(node))
        start = max((finish[p] for p in preds), default=0.0)
        best_pred[node] = max(preds, key=lambda p: finish[p]) if preds else None
        finish[node] = start + weights[node]
    end = graph.node_ids_of_kind(STEP_END)[0]
    path, cursor = [], end
    while cursor is not None:
        path.append(cursor)
        cursor = best_pred[cursor]
    return finish[end], path[::-1]


def summarize(graph: StepGraph, top: int = 10) -> GraphSummary:
    by_id = {n.id: n for n in graph.nodes}
    length_us, path = critical_path(graph)
    ops = [n for n in graph.nodes if n.kind not in (STEP_START, STEP_END)]
    untraced = graph.model.get("untraced_step_time_s")
    return GraphSummary(
        model=str(graph.model.get("name", graph.source.get("path", ""))),
        counts_by_kind=dict(Counter(n.kind for n in ops)),
        download_bytes=graph.bytes_of_kind(DOWNLOAD),
        upload_bytes=graph.bytes_of_kind(UPLOAD),
        critical_path_compute_us=sum(by_id[i].duration.mean_us for i in path if by_id[i].kind in (COMPUTE, PS_COMPUTE)),
        critical_path_us=length_us,
        total_transfer_us=sum(n.duration.mean_us for n in ops if n.kind in (DOWNLOAD, UPLOAD)),
        total_compute_us=sum(n.duration.mean_us for n in ops if n.kind in (COMPUTE, PS_COMPUTE)),
        untraced_step_time_s=float(untraced["mean"]) if isinstance(untraced, dict) else None,
        top_ops=[(n.kind, n.name, n.duration.mean_us) for n in sorted(ops, key=lambda n: -n.duration.mean_us)[:top]],
        extra_tensors=list(graph.extra_tensors),
    )


def format_summary(summary: GraphSummary) -> str:
    lines = [f"step graph of {summary.model}"]
    kinds = (DOWNLOAD, COMPUTE, UPLOAD, PS_COMPUTE)
    lines.append("ops per step:      " + ", ".join(f"{summary.counts_by_kind.get(k, 0)} {k}" for k in kinds))
    lines.append(f"bytes per step:    {summary.download_bytes:,} down (PS to worker), {summary.upload_bytes:,} up")
    lines.append(
        f"critical path:     {summary.critical_path_us / 1000:.2f} ms, of which compute "
        f"{summary.critical_path_compute_us / 1000:.2f} ms"
    )
    lines.append(f"total compute:     {summary.total_compute_us / 1000:.2f} ms (all ops, summed)")
    lines.append(f"total transfer:    {summary.total_transfer_us / 1000:.2f} ms (measured on the profiling link)")
    if summary.untraced_step_time_s is not None:
        lines.append(f"untraced step:     {summary.untraced_step_time_s * 1000:.2f} ms measured by the collector")
    sized = [e for e in summary.extra_tensors if e["bytes"] > 0]
    control_only = len(summary.extra_tensors) - len(sized)
    if sized:
        extras = ", ".join(f"{e['tensor']} ({e['bytes']} B {e['direction']})" for e in sized)
        lines.append(f"extra tensors:     {extras}")
    if control_only:
        lines.append(f"control transfers: {control_only} of 0 bytes (cross-device control edges)")
    lines.append("top ops by mean time:")
    for kind, name, duration_us in summary.top_ops:
        lines.append(f"  {duration_us / 1000:9.3f} ms  {kind:<10} {name}")
    return "\n".join(lines)
