"""The step-graph file: the versioned contract between ``tracetool`` and ``replay``.

A step graph describes one training step of one worker as a DAG of per-tensor operations
(downloads, worker compute, uploads, PS ops) with measured durations and sizes. It is written
by ``tracetool graph`` and read by ``replay``; the full field reference is
``docs/stepgraph-schema.md``. This module must never import TensorFlow: ``replay`` runs on
machines that only have the JSON file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from tracetool.atomic_files import write_text_atomically
from tracetool.errors import ToolError

SCHEMA_NAME = "tfsim.stepgraph"
SCHEMA_VERSION = 1

STEP_START = "step_start"
STEP_END = "step_end"
DOWNLOAD = "download"  # parameter transfer PS -> worker
UPLOAD = "upload"  # gradient (or other tensor) transfer worker -> PS
COMPUTE = "compute"  # op on the worker
PS_COMPUTE = "ps_compute"  # op on the PS (variable reads, optimizer updates)
NODE_KINDS = (STEP_START, STEP_END, DOWNLOAD, UPLOAD, COMPUTE, PS_COMPUTE)
TRANSFER_KINDS = (DOWNLOAD, UPLOAD)


@dataclass(frozen=True)
class DurationStats:
    """Durations of one op over the traced steps, in microseconds as TensorFlow records them."""

    mean_us: float
    std_us: float
    samples_us: tuple[float, ...]

    @staticmethod
    def of(samples_us: Iterable[float]) -> DurationStats:
        values = tuple(float(s) for s in samples_us)
        if not values:
            return DurationStats(0.0, 0.0, ())
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / len(values)
        return DurationStats(mean, math.sqrt(var), values)


@dataclass(frozen=True)
class StepNode:
    """One operation of the step.

    ``lane`` names the execution resource: a worker thread / GPU stream for compute ops, the PS
    device for PS ops, ``downlink`` / ``uplink`` for transfers. ``start_offset_us`` is the mean
    start relative to the step's start, which gives the trace's transfer order.
    ``gap_us`` is the mean time the op waited after its inputs were ready and its lane free
    (executor scheduling cost), kept apart from its duration so replay can charge it too.
    """

    id: int
    kind: str
    name: str
    device: str
    lane: str
    duration: DurationStats
    start_offset_us: float = 0.0
    gap_us: float = 0.0
    op: str = ""
    bytes: int = 0
    tensor: str = ""


@dataclass(frozen=True)
class StepEdge:
    src: int
    dst: int
    kind: str = "data"  # "data" or "control"


@dataclass
class StepGraph:
    """A whole step graph plus the facts replay needs to calibrate itself."""

    nodes: list[StepNode]
    edges: list[StepEdge]
    model: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    link_calibration: dict[str, float] = field(default_factory=dict)
    extra_tensors: list[dict[str, Any]] = field(default_factory=list)

    def node_ids_of_kind(self, kind: str) -> list[int]:
        return [n.id for n in self.nodes if n.kind == kind]

    def bytes_of_kind(self, kind: str) -> int:
        return sum(n.bytes for n in self.nodes if n.kind == kind)

    def to_networkx(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        for node in self.nodes:
            graph.add_node(node.id, record=node)
        for edge in self.edges:
            graph.add_edge(edge.src, edge.dst, kind=edge.kind)
        return graph

    def check_invariants(self) -> None:
        """Raise ToolError unless the graph is a DAG that flows from its one start to its one end."""
        starts = self.node_ids_of_kind(STEP_START)
        ends = self.node_ids_of_kind(STEP_END)
        if len(starts) != 1 or len(ends) != 1:
            raise ToolError(
                f"step graph needs exactly one step_start and one step_end, has {len(starts)} and {len(ends)}"
            )
        ids = [n.id for n in self.nodes]
        if ids != list(range(len(ids))):
            raise ToolError("step graph node ids must be 0..n-1 in order")
        graph = self.to_networkx()
        if not nx.is_directed_acyclic_graph(graph):
            cycle = nx.find_cycle(graph)
            raise ToolError(f"step graph has a cycle through node {cycle[0][0]}")
        reachable = nx.descendants(graph, starts[0]) | {starts[0]}
        reaching = nx.ancestors(graph, ends[0]) | {ends[0]}
        stray = [n.name for n in self.nodes if n.id not in reachable or n.id not in reaching]
        if stray:
            raise ToolError(f"step graph nodes not on a path from step_start to step_end: {', '.join(stray[:5])}")

    def to_json_dict(self) -> dict[str, Any]:
        nodes = []
        for node in self.nodes:
            record = asdict(node)
            record["duration"] = {
                "mean_us": node.duration.mean_us,
                "std_us": node.duration.std_us,
                "samples_us": list(node.duration.samples_us),
            }
            nodes.append(record)
        return {
            "schema": SCHEMA_NAME,
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "source": self.source,
            "link_calibration": self.link_calibration,
            "extra_tensors": self.extra_tensors,
            "nodes": nodes,
            "edges": [asdict(e) for e in self.edges],
        }


def stepgraph_from_json_dict(data: Any, origin: str = "step graph") -> StepGraph:
    """Parse and check a step-graph document; every defect becomes a one-line ToolError."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise ToolError(
            f'{origin} is not a step graph (no "schema": "{SCHEMA_NAME}"); make one with \'tracetool graph\''
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ToolError(
            f"{origin} has step-graph schema version {version}, this tool reads version {SCHEMA_VERSION}; "
            "rebuild it with 'tracetool graph'"
        )
    try:
        nodes = [
            StepNode(
                id=int(n["id"]),
                kind=str(n["kind"]),
                name=str(n["name"]),
                device=str(n.get("device", "")),
                lane=str(n.get("lane", "")),
                duration=DurationStats(
                    float(n["duration"]["mean_us"]),
                    float(n["duration"]["std_us"]),
                    tuple(float(s) for s in n["duration"]["samples_us"]),
                ),
                start_offset_us=float(n.get("start_offset_us", 0.0)),
                gap_us=float(n.get("gap_us", 0.0)),
                op=str(n.get("op", "")),
                bytes=int(n.get("bytes", 0)),
                tensor=str(n.get("tensor", "")),
            )
            for n in data["nodes"]
        ]
        edges = [StepEdge(int(e["src"]), int(e["dst"]), str(e.get("kind", "data"))) for e in data["edges"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ToolError(
            f"{origin} is a damaged step graph ({type(exc).__name__}: {exc}); rebuild it with 'tracetool graph'"
        ) from None
    unknown = sorted({n.kind for n in nodes} - set(NODE_KINDS))
    if unknown:
        raise ToolError(f"{origin} has unknown node kinds {unknown}")
    for edge in edges:
        if not (0 <= edge.src < len(nodes) and 0 <= edge.dst < len(nodes)):
            raise ToolError(f"{origin} has an edge {edge.src}->{edge.dst} to a node that does not exist")
    graph = StepGraph(
        nodes=nodes,
        edges=edges,
        model=dict(data.get("model", {})),
        source=dict(data.get("source", {})),
        link_calibration={k: float(v) for k, v in dict(data.get("link_calibration", {})).items()},
        extra_tensors=list(data.get("extra_tensors", [])),
    )
    graph.check_invariants()
    return graph


def load_stepgraph(path: str | os.PathLike[str]) -> StepGraph:
    path = Path(path)
    if not path.exists():
        raise ToolError(f"step graph {path} does not exist; make one with 'tracetool graph PROFILE_DIR --out {path}'")
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give the step-graph JSON file made by 'tracetool graph'")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolError(
            f"{path} is not valid JSON ({exc.__class__.__name__}); give a step graph made by 'tracetool graph'"
        ) from None
    return stepgraph_from_json_dict(data, origin=str(path))


def save_stepgraph(graph: StepGraph, path: str | os.PathLike[str]) -> None:
    graph.check_invariants()
    write_text_atomically(path, json.dumps(graph.to_json_dict(), indent=1) + "\n")
