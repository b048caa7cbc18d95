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
from tracetool.graph.json_fields import (
    MAX_BANDWIDTH_BPS,
    MAX_BYTES,
    MAX_COUNT,
    MAX_DURATION_S,
    MAX_DURATION_US,
    MIN_BANDWIDTH_BPS,
    Place,
    SubPlace,
    choice_field,
    list_field,
    mean_and_samples,
    number_field,
    object_field,
    shown,
    string_field,
    whole_field,
)

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
EXTRA_TENSOR_KINDS = ("rows", "other")  # rows: what an embedding lookup sends down; other: the rest
EDGE_KINDS = ("data", "control")
REBUILD_FIX = "rebuild it with 'tracetool graph'"

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

    def check_invariants(self, origin: str = "step graph", fix: str = REBUILD_FIX) -> None:
        """Raise a one-line ToolError unless the graph keeps the schema's guarantees: one start and one
        end, ids 0..n-1, acyclic, every node on a path from start to end, downloads carrying the
        parameters. ``origin`` names the file and ``fix`` says what to do, for the message."""
        starts = self.node_ids_of_kind(STEP_START)
        ends = self.node_ids_of_kind(STEP_END)
        if len(starts) != 1 or len(ends) != 1:
            raise ToolError(
                f"{origin}: a step graph needs exactly one step_start and one step_end node, this one has "
                f"{len(starts)} and {len(ends)}; {fix}"
            )
        for index, node in enumerate(self.nodes):
            if node.id != index:
                raise ToolError(
                    f"{origin}: {_node_label(node)} sits at position {index}: node ids must be "
                    f"0..n-1 in list order; {fix}"
                )
        graph = self.to_networkx()
        if not nx.is_directed_acyclic_graph(graph):
            cycle_node = self.nodes[nx.find_cycle(graph)[0][0]]
            raise ToolError(f"{origin}: the edges make a cycle through {_node_label(cycle_node)}; {fix}")
        reachable = nx.descendants(graph, starts[0]) | {starts[0]}
        reaching = nx.ancestors(graph, ends[0]) | {ends[0]}
        stray = [_node_label(n) for n in self.nodes if n.id not in reachable or n.id not in reaching]
        if stray:
            more = f" and {len(stray) - 3} more" if len(stray) > 3 else ""
            raise ToolError(f"{origin}: {', '.join(stray[:3])}{more} not on a path from step_start to step_end; {fix}")
        self._check_parameter_bytes(origin, fix)

    def _check_parameter_bytes(self, origin: str, fix: str) -> None:
        """The downloads, apart from the extra tensors, carry exactly the model's parameters: the
        link load of a step rests on this sum, so a lost or invented byte is a different model."""
        expected = self.model.get("parameter_bytes")
        if not isinstance(expected, int) or isinstance(expected, bool):
            return  # foreign traces carry no parameter facts
        extra = sum(e.get("bytes", 0) for e in self.extra_tensors if e.get("direction") == DOWNLOAD)
        carried = self.bytes_of_kind(DOWNLOAD) - extra
        if carried != expected:
            raise ToolError(
                f"{origin}: the downloads carry {carried} parameter bytes (all {self.bytes_of_kind(DOWNLOAD)} "
                f"download bytes minus {extra} of extra_tensors), but model field 'parameter_bytes' is "
                f"{expected}; {fix}"
            )

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


def _node_label(node: StepNode) -> str:
    return f"node {node.id} ({shown(node.name, limit=100)})"


def _node_from_json(raw: Any, index: int, origin: str, fix: str) -> StepNode:
    place = Place(origin, f"node #{index}", fix)
    if not isinstance(raw, dict):
        raise ToolError(f"{origin}: node #{index} is {shown(raw)}, not an object; {fix}")
    node_id = whole_field(raw, "id", place)
    name = string_field(raw, "name", Place(origin, f"node {node_id}", fix))
    place = Place(origin, f"node {node_id} ({shown(name, limit=100)})", fix)
    if node_id != index:
        raise place.refuse("id", f"is {node_id} at position {index}; ids must be 0..n-1 in list order")
    kind = choice_field(raw, "kind", place, NODE_KINDS)
    duration = object_field(raw, "duration", place)
    inner = SubPlace(origin, place.record, fix, "duration")
    mean_us, samples_us = mean_and_samples(duration, "mean_us", "samples_us", inner, MAX_DURATION_US, " us")
    if kind in TRANSFER_KINDS:
        size = whole_field(raw, "bytes", place, maximum=MAX_BYTES)
    else:
        size = whole_field(raw, "bytes", place, default=0, maximum=MAX_BYTES)
        if size:
            raise place.refuse("bytes", f"is {size}, but only transfers carry bytes ({kind} nodes have 0)")
    return StepNode(
        id=node_id,
        kind=kind,
        name=name,
        device=string_field(raw, "device", place, default=""),
        lane=string_field(raw, "lane", place, default=""),
        duration=DurationStats(
            mean_us, number_field(duration, "std_us", inner, maximum=MAX_DURATION_US, unit=" us"), samples_us
        ),
        start_offset_us=number_field(raw, "start_offset_us", place, default=0.0, maximum=MAX_DURATION_US, unit=" us"),
        gap_us=number_field(raw, "gap_us", place, default=0.0, maximum=MAX_DURATION_US, unit=" us"),
        op=string_field(raw, "op", place, default=""),
        bytes=size,
        tensor=string_field(raw, "tensor", place, default=""),
    )


def _edge_from_json(raw: Any, index: int, n_nodes: int, origin: str, fix: str) -> StepEdge:
    if not isinstance(raw, dict):
        raise ToolError(f"{origin}: edge #{index} is {shown(raw)}, not an object; {fix}")
    place = Place(origin, f"edge #{index}", fix)
    ends = []
    for key in ("src", "dst"):
        node = whole_field(raw, key, place)
        if node >= n_nodes:
            raise place.refuse(key, f"is {node}, but the graph has nodes 0..{n_nodes - 1}")
        ends.append(node)
    return StepEdge(ends[0], ends[1], choice_field(raw, "kind", place, EDGE_KINDS, default="data"))


def _check_step_time(model: dict[str, Any], key: str, place: Place) -> None:
    """A measured step time ``{mean, std, samples}`` in seconds; calibration aims at its mean."""
    if key not in model:
        return
    stats = object_field(model, key, place)
    inner = SubPlace(place.origin, place.record, place.fix, key)
    mean_and_samples(stats, "mean", "samples", inner, MAX_DURATION_S, " s")
    number_field(stats, "std", inner, default=0.0, maximum=MAX_DURATION_S, unit=" s")


def _model_from_json(model: dict[str, Any], origin: str, fix: str) -> dict[str, Any]:
    """The model facts replay reads (names, batch, parameter bytes, step times) in their types and ranges."""
    place = Place(origin, "model", fix)
    facts = dict(model)
    for key in ("name", "optimizer"):
        string_field(model, key, place, default="")
    for key in ("batch_size", "parameter_count", "intra_op_threads", "inter_op_threads", "parameter_bytes"):
        if key in model:  # stored as int, so 4096.0 counts the same as 4096 from here on
            facts[key] = whole_field(model, key, place, maximum=MAX_BYTES if key == "parameter_bytes" else MAX_COUNT)
    for key in ("untraced_step_time_s", "traced_step_time_s"):
        _check_step_time(model, key, place)
    if "embedding_tables" in model:
        facts["embedding_tables"] = [_embedding_table(raw, Place(origin, f"model embedding_tables #{i}", fix))
                                     for i, raw in enumerate(list_field(model, "embedding_tables", place))]
    if "untraced_steps_per_second" in model:
        rate = number_field(model, "untraced_steps_per_second", place, maximum=1e9, unit=" steps/s")
        if 0 < rate < 1.0 / MAX_DURATION_S:
            raise place.refuse("untraced_steps_per_second", f"is {rate:g}: a step would last over a day")
    return facts


def _embedding_table(raw: Any, place: Place) -> dict[str, Any]:
    """A table the step reads by rows: its name, rows and bytes."""
    if not isinstance(raw, dict):
        raise ToolError(f"{place.origin}: {place.record} is {shown(raw)}, not an object; {place.fix}")
    return {**raw, "name": string_field(raw, "name", place), "rows": whole_field(raw, "rows", place),
            "bytes": whole_field(raw, "bytes", place, maximum=MAX_BYTES)}


def _source_from_json(source: dict[str, Any], origin: str, fix: str) -> dict[str, Any]:
    place = Place(origin, "source", fix)
    for key in ("kind", "path", "tensorflow_version"):
        string_field(source, key, place, default="")
    facts = dict(source)
    if "traced_steps" in source:
        facts["traced_steps"] = whole_field(source, "traced_steps", place)
    if not isinstance(source.get("has_ps_transfers", False), bool):
        raise place.refuse("has_ps_transfers", f"is {shown(source['has_ps_transfers'])}, not true or false")
    return facts


_CALIBRATION_LIMITS = {
    "download_bandwidth_bps": (MAX_BANDWIDTH_BPS, " bit/s"),
    "upload_bandwidth_bps": (MAX_BANDWIDTH_BPS, " bit/s"),
    "per_transfer_overhead_s": (MAX_DURATION_S, " s"),
}


def _link_calibration_from_json(calibration: dict[str, Any], origin: str, fix: str) -> dict[str, float]:
    """Every calibration figure is a finite, non-negative number (0 bandwidth: not calibrated)."""
    place = Place(origin, "link_calibration", fix)
    figures = {}
    for key in calibration:
        maximum, unit = _CALIBRATION_LIMITS.get(key, (float(MAX_COUNT), ""))
        figures[key] = number_field(calibration, key, place, maximum=maximum, unit=unit)
    for key in ("download_bandwidth_bps", "upload_bandwidth_bps"):
        if 0.0 < figures.get(key, 0.0) < MIN_BANDWIDTH_BPS:
            raise place.refuse(key, f"is {figures[key]:g}: 0 (not calibrated) or at least {MIN_BANDWIDTH_BPS:g} bit/s")
    return figures


def _extra_tensor_from_json(raw: Any, index: int, origin: str, fix: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ToolError(f"{origin}: extra_tensors #{index} is {shown(raw)}, not an object; {fix}")
    place = Place(origin, f"extra_tensors #{index}", fix)
    return {
        **raw,
        "tensor": string_field(raw, "tensor", place),
        "bytes": whole_field(raw, "bytes", place, maximum=MAX_BYTES),
        "direction": choice_field(raw, "direction", place, TRANSFER_KINDS),
        "kind": choice_field(raw, "kind", place, EXTRA_TENSOR_KINDS, default="other"),
    }


def _check_header(data: Any, origin: str, fix: str) -> None:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise ToolError(
            f'{origin} is not a step graph (no "schema": "{SCHEMA_NAME}"); make one with \'tracetool graph\''
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise ToolError(
            f"{origin} has step-graph schema version {shown(version)}, this tool reads version {SCHEMA_VERSION}; {fix}"
        )


def stepgraph_from_json_dict(data: Any, origin: str = "step graph", fix: str = REBUILD_FIX) -> StepGraph:
    """Parse and check a step-graph document against docs/stepgraph-schema.md.

    Every check the schema promises is made here, once, so replay can trust what it reads: a
    damaged file becomes a one-line ToolError naming ``origin``, the record and the field, and
    ending in ``fix``, instead of a traceback or a silently different prediction.
    """
    _check_header(data, origin, fix)
    top = Place(origin, "top-level", fix)
    nodes = [_node_from_json(raw, i, origin, fix) for i, raw in enumerate(list_field(data, "nodes", top))]
    edges = [_edge_from_json(raw, i, len(nodes), origin, fix) for i, raw in enumerate(list_field(data, "edges", top))]
    graph = StepGraph(
        nodes=nodes,
        edges=edges,
        model=_model_from_json(object_field(data, "model", top, default={}), origin, fix),
        source=_source_from_json(object_field(data, "source", top, default={}), origin, fix),
        link_calibration=_link_calibration_from_json(
            object_field(data, "link_calibration", top, default={}), origin, fix
        ),
        extra_tensors=[
            _extra_tensor_from_json(raw, i, origin, fix)
            for i, raw in enumerate(list_field(data, "extra_tensors", top, []))
        ],
    )
    graph.check_invariants(origin, fix)
    return graph


def load_stepgraph(path: str | os.PathLike[str]) -> StepGraph:
    """Read and check a step-graph file; every problem with it is a one-line ToolError."""
    path = Path(path)
    if not path.exists():
        raise ToolError(f"step graph {path} does not exist; make one with 'tracetool graph PROFILE_DIR --out {path}'")
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give the step-graph JSON file made by 'tracetool graph'")
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read step graph {path} ({exc.strerror or type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and integers too long to convert; RecursionError, nesting too deep.
        raise ToolError(
            f"{path} is not valid JSON ({exc.__class__.__name__}); give a step graph made by 'tracetool graph'"
        ) from None
    return stepgraph_from_json_dict(data, origin=str(path))


def save_stepgraph(graph: StepGraph, path: str | os.PathLike[str]) -> None:
    """Write the graph after reading it back through the reader: a file that ``replay`` would
    refuse is never written, and write and read check exactly the same promises."""
    text = json.dumps(graph.to_json_dict(), indent=1) + "\n"
    stepgraph_from_json_dict(
        json.loads(text),
        origin=f"the step graph for {path}",
        fix="nothing was written; this is a bug of the graph builder, please report it with the trace",
    )
    write_text_atomically(path, text)
