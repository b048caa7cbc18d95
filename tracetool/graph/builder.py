"""Turn traced steps into one step graph of per-tensor operations.

Input is one or more ``StepTrace``s of the same step (from a profile folder, one RunMetadata or
one Chrome timeline). Every op and transfer becomes a node keyed by what it is, so the same op
in different traced steps collects duration samples on one node. Dependencies come from the
partition graphs' _Send/_Recv pairs and from the inputs in the ops' timeline labels. Nothing
here knows about file formats; nothing here simulates.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from tracetool.errors import ToolError
from tracetool.graph.profiler_events import ProfilerCapture
from tracetool.graph.read_chrome import chrome_timeline_from_data, load_json, read_chrome_timeline
from tracetool.graph.read_trace_viewer import is_trace_viewer, trace_viewer_capture
from tracetool.graph.read_xplane import read_xplane
from tracetool.graph.stepgraph import (
    COMPUTE,
    DOWNLOAD,
    PS_COMPUTE,
    STEP_END,
    STEP_START,
    UPLOAD,
    DurationStats,
    StepEdge,
    StepGraph,
    StepNode,
)
from tracetool.graph.tf2_profile import tf2_step_traces
from tracetool.graph.trace_formats import refuse_foreign_by_name
from tracetool.graph.trace_records import (
    OpRecord,
    StepTrace,
    job_of,
    producer_of_rendezvous,
    strip_output_index,
    strip_rendezvous_suffix,
)
from tracetool.graph.variables_file import ModelVariables

NodeKey = tuple[str, str, str]  # (kind, device, name)
# a consumer of a tensor copied between host and GPU names it "<producer>/_<k>"
_COPY_INPUT = re.compile(r"/_\d+$")
SMALL_TRANSFER_BYTES = 64 * 1024


@dataclass
class _NodeFacts:
    kind: str
    device: str
    name: str
    op: str = ""
    bytes: int = 0
    tensor: str = ""
    durations_us: list[float] = field(default_factory=list)
    offsets_us: list[float] = field(default_factory=list)
    gaps_us: list[float] = field(default_factory=list)
    lanes: Counter[str] = field(default_factory=Counter)


def _is_ps(device: str) -> bool:
    return job_of(device) == "ps"


def _merge_duplicates(records: tuple[OpRecord, ...]) -> list[OpRecord]:
    """One record per (device, name): GPU traces list an op on its launch thread and its stream."""
    grouped: dict[tuple[str, str], list[OpRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.device, record.name)].append(record)
    merged = []
    for group in grouped.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        streams = [r for r in group if r.lane.startswith("stream:") and r.lane != "stream:all"]
        best = max(streams or group, key=lambda r: r.duration_us)
        labelled = max(group, key=lambda r: len(r.inputs) + len(r.control_inputs))
        # An op that launches several kernels lasts from its first kernel's start to its last
        # kernel's end on the GPU (softmax cross-entropy: 7 kernels over 266 us, the longest 13 us)
        duration = (max(r.start_us + r.duration_us for r in streams) - min(r.start_us for r in streams)
                    if streams else best.duration_us)
        merged.append(
            OpRecord(
                best.device,
                best.name,
                labelled.op,
                min(r.start_us for r in group),
                duration,
                best.lane,
                labelled.inputs,
                labelled.control_inputs,
                best.transfer,
            )
        )
    return merged


def _node_key(record: OpRecord) -> NodeKey | None:
    if record.transfer is not None:
        src_ps, dst_ps = _is_ps(record.transfer.src_device), _is_ps(record.transfer.dst_device)
        if src_ps and not dst_ps:
            return (DOWNLOAD, record.device, record.transfer.rendezvous)
        if dst_ps and not src_ps:
            return (UPLOAD, record.device, record.transfer.rendezvous)
        return None  # worker-to-worker or PS-to-PS: not part of the PS link model
    return (PS_COMPUTE if _is_ps(record.device) else COMPUTE, record.device, record.name)


class _StepGraphAssembler:
    """Accumulates nodes and edges over the traced steps, then freezes them into a StepGraph."""

    def __init__(self) -> None:
        self.facts: dict[NodeKey, _NodeFacts] = {}
        self.edges: dict[tuple[NodeKey, NodeKey], str] = {}

    def add_step(self, trace: StepTrace) -> None:
        records = _merge_duplicates(trace.records)
        if not records:
            return
        step_start_us = min(r.start_us for r in records)
        by_key: dict[NodeKey, OpRecord] = {}
        for record in records:
            key = _node_key(record)
            if key is not None:
                by_key[key] = record
        ops_by_device_name = {(k[1], k[2]): k for k in by_key if k[0] in (COMPUTE, PS_COMPUTE)}
        copies = self._link_device_copies(by_key)
        # a consumer names a received tensor by its _Recv node ("x_S1"), else by its producer ("x")
        transfer_by_input: dict[tuple[str, str], NodeKey] = {}
        recv_nodes = {(p.recv_device, p.recv_node): p.rendezvous for p in trace.rendezvous}
        producers = {p.rendezvous: (p.send_device, p.producer) for p in trace.rendezvous}
        for key, record in by_key.items():
            if key[0] not in (DOWNLOAD, UPLOAD):
                continue
            transfer = record.transfer
            assert transfer is not None
            producer = producers.get(
                transfer.rendezvous, (transfer.src_device, producer_of_rendezvous(transfer.rendezvous))
            )
            transfer_by_input[(transfer.dst_device, producer[1])] = key
            src_key = ops_by_device_name.get(producer)
            if src_key is not None:
                self.edges[(src_key, key)] = "data"
        for (device, recv_node), rendezvous in recv_nodes.items():
            producer = producers[rendezvous]
            if (device, producer[1]) in transfer_by_input:
                transfer_by_input[(device, recv_node)] = transfer_by_input[(device, producer[1])]

        ready_us: dict[NodeKey, float] = {}
        for key, record in by_key.items():
            if key[0] in (COMPUTE, PS_COMPUTE):
                for inputs, kind in ((record.inputs, "data"), (record.control_inputs, "control")):
                    for name in inputs:
                        src = self._resolve_input(record.device, name, ops_by_device_name, transfer_by_input)
                        if src is None and _COPY_INPUT.search(name):
                            src = copies.get(_COPY_INPUT.sub("", strip_output_index(name)))
                        if src is not None and src != key:
                            self.edges.setdefault((src, key), kind)
            facts = self.facts.get(key)
            if facts is None:
                facts = self.facts[key] = _NodeFacts(kind=key[0], device=key[1], name=key[2], op=record.op)
                if record.transfer is not None:
                    facts.bytes = record.transfer.bytes
                    facts.tensor = producer_of_rendezvous(record.transfer.rendezvous)
            facts.durations_us.append(record.duration_us)
            facts.offsets_us.append(record.start_us - step_start_us)
            facts.lanes[record.lane] += 1
            ready_us[key] = record.end_us
        self._record_gaps(by_key, step_start_us)

    def _link_device_copies(self, by_key: dict[NodeKey, OpRecord]) -> dict[str, NodeKey]:
        """Host-to-GPU and GPU-to-host copies (``MEMCPYHtoD``, named ``edge_<n>_<producer>``): each
        follows the op that produced its tensor; returns them by that tensor for their consumers."""
        copies = {producer_of_rendezvous(key[2]): key for key, record in by_key.items()
                  if key[0] == COMPUTE and record.op.upper().startswith("MEMCPY")}
        for key in by_key:
            copy = copies.get(key[2]) if key[0] in (COMPUTE, PS_COMPUTE) else None
            if copy is not None and copy != key:
                self.edges.setdefault((key, copy), "data")
        return copies

    @staticmethod
    def _resolve_input(
        device: str, name: str, ops: dict[tuple[str, str], NodeKey], transfers: dict[tuple[str, str], NodeKey]
    ) -> NodeKey | None:
        for candidate in (name, strip_rendezvous_suffix(name)):
            if (device, candidate) in transfers:
                return transfers[(device, candidate)]
            if (device, candidate) in ops:
                return ops[(device, candidate)]
        return None

    def _record_gaps(self, by_key: dict[NodeKey, OpRecord], step_start_us: float) -> None:
        """Dispatch wait of each op in this step: start minus max(inputs ready, lane free)."""
        preds: dict[NodeKey, list[NodeKey]] = defaultdict(list)
        for src, dst in self.edges:
            preds[dst].append(src)
        lane_free: dict[tuple[str, str], float] = {}
        ordered = sorted((r.start_us, k) for k, r in by_key.items() if k[0] in (COMPUTE, PS_COMPUTE))
        for start_us, key in ordered:
            record = by_key[key]
            inputs_ready = max((by_key[p].end_us for p in preds[key] if p in by_key), default=step_start_us)
            lane = (record.device, record.lane)
            ready = max(inputs_ready, lane_free.get(lane, step_start_us))
            self.facts[key].gaps_us.append(max(0.0, start_us - ready))
            lane_free[lane] = max(lane_free.get(lane, step_start_us), record.end_us)

    def freeze(self) -> tuple[list[StepNode], list[StepEdge]]:
        keys = sorted(self.facts, key=lambda k: (statistics.fmean(self.facts[k].offsets_us), k))
        index = {key: i + 1 for i, key in enumerate(keys)}
        nodes = [StepNode(0, STEP_START, "step_start", "", "", DurationStats.of([0.0]))]
        for key in keys:
            facts = self.facts[key]
            if facts.kind in (DOWNLOAD, UPLOAD):
                lane = "downlink" if facts.kind == DOWNLOAD else "uplink"
            elif facts.kind == PS_COMPUTE:
                lane = facts.device
            else:
                lane = f"{facts.device}#{facts.lanes.most_common(1)[0][0]}"
            nodes.append(
                StepNode(
                    id=index[key],
                    kind=facts.kind,
                    name=facts.name,
                    device=facts.device,
                    lane=lane,
                    duration=DurationStats.of(facts.durations_us),
                    start_offset_us=statistics.fmean(facts.offsets_us),
                    gap_us=statistics.fmean(facts.gaps_us) if facts.gaps_us else 0.0,
                    op=facts.op,
                    bytes=facts.bytes,
                    tensor=facts.tensor,
                )
            )
        end_id = len(nodes)
        nodes.append(StepNode(end_id, STEP_END, "step_end", "", "", DurationStats.of([0.0])))
        graph = nx.DiGraph()
        graph.add_nodes_from(range(end_id + 1))
        for (src, dst), kind in self.edges.items():
            graph.add_edge(index[src], index[dst], kind=kind)
        _break_cycles(graph)
        for node_id in range(1, end_id):
            if graph.in_degree(node_id) == 0:
                graph.add_edge(0, node_id, kind="control")
            if graph.out_degree(node_id) == 0:
                graph.add_edge(node_id, end_id, kind="control")
        edges = [StepEdge(s, d, k) for s, d, k in sorted(graph.edges(data="kind"))]
        return nodes, edges


def _break_cycles(graph: nx.DiGraph) -> None:
    """Labels can name loop back-edges (NextIteration); drop the edge closing each cycle."""
    while True:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return
        graph.remove_edge(*cycle[-1][:2])


def _calibrate_link(nodes: list[StepNode]) -> dict[str, float]:
    """Effective bandwidth per direction (bytes over busy time) and per-transfer overhead."""
    calibration: dict[str, float] = {}
    small = [
        s
        for n in nodes
        if n.kind in (DOWNLOAD, UPLOAD) and n.bytes <= SMALL_TRANSFER_BYTES
        for s in n.duration.samples_us
    ]
    # small transfers queued behind large ones measure the queue, not the overhead: take a low quantile
    calibration["per_transfer_overhead_s"] = _quantile(small, 0.25) / 1e6 if small else 0.0
    fitted = 0
    for kind, field_name in ((DOWNLOAD, "download_bandwidth_bps"), (UPLOAD, "upload_bandwidth_bps")):
        transfers = [n for n in nodes if n.kind == kind]
        steps = min((len(n.duration.samples_us) for n in transfers), default=0)
        busy_s, moved_bytes = 0.0, 0
        for step in range(steps):
            intervals = sorted((n.start_offset_us, n.start_offset_us + n.duration.samples_us[step]) for n in transfers)
            busy_s += _union_length(intervals) / 1e6
            moved_bytes += sum(n.bytes for n in transfers)
        fitted += len(transfers) * steps
        if busy_s > 0:
            calibration[field_name] = 8.0 * moved_bytes / busy_s
    calibration["transfers_fitted"] = float(fitted)
    return calibration


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total, current_start, current_end = 0.0, None, None
    for start, end in intervals:
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start  # type: ignore[operator]
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start  # type: ignore[operator]
    return total


# PS ops whose output is rows of a variable: an embedding lookup next to its table
GATHER_OPS = frozenset({"ResourceGather", "ResourceGatherNd", "GatherV2", "Gather"})


def _extra_tensors(nodes: list[StepNode], graph_edges: list[StepEdge]) -> list[dict[str, Any]]:
    """Transfers that are not a whole parameter read or a gradient: the rows an embedding lookup
    sends down (``kind`` "rows"), the ids it was sent, the learning rate sent to the PS."""
    by_id = {n.id: n for n in nodes}
    producer_op = {e.dst: by_id[e.src].op for e in graph_edges if e.kind == "data"}
    extras = []
    for node in nodes:
        if node.kind == DOWNLOAD and producer_op.get(node.id) != "ReadVariableOp":
            kind = "rows" if producer_op.get(node.id) in GATHER_OPS else "other"
            extras.append({"tensor": node.tensor, "bytes": node.bytes, "direction": "download", "kind": kind})
        if node.kind == UPLOAD and not node.tensor.startswith("gradients"):
            extras.append({"tensor": node.tensor, "bytes": node.bytes, "direction": "upload", "kind": "other"})
    return extras


def build_stepgraph(traces: list[StepTrace], meta: dict[str, Any] | None = None, source_path: str = "",
                    variables_match: dict[str, Any] | None = None) -> StepGraph:
    """``variables_match`` marks traces whose transfers were written from the model's variables
    (TF2 captures): their transfers are untimed, so the graph gets no link calibration."""
    if not traces:
        raise ToolError("no traced steps to build a graph from")
    assembler = _StepGraphAssembler()
    for trace in traces:
        assembler.add_step(trace)
    nodes, edges = assembler.freeze()
    if len(nodes) <= 2:
        raise ToolError(f"{source_path}: the trace holds no ops")
    meta = meta or {}
    model = {
        k: meta[k]
        for k in (
            "model",
            "batch_size",
            "optimizer",
            "parameter_bytes",
            "parameter_count",
            "embedding_tables",
            "untraced_step_time_s",
            "untraced_steps_per_second",
            "traced_step_time_s",
            "intra_op_threads",
            "inter_op_threads",
            # the CPU the op times were measured on: they hold on that CPU only
            "cpu_model",
            "cpu_count",
        )
        if k in meta
    }
    if "model" in model:
        model["name"] = model.pop("model")
    extras = _extra_tensors(nodes, edges)
    graph = StepGraph(
        nodes=nodes,
        edges=edges,
        model=model,
        source={
            "kind": traces[0].source_kind if len(traces) == 1 else f"profile ({traces[0].source_kind})",
            "path": source_path,
            "traced_steps": len(traces),
            "tensorflow_version": meta.get("tensorflow_version", ""),
            "has_ps_transfers": any(n.kind in (DOWNLOAD, UPLOAD) for n in nodes),
            **({"variables": variables_match} if variables_match is not None else {}),
        },
        link_calibration=_calibrate_link(nodes) if variables_match is None else {},
        extra_tensors=extras,
    )
    graph.check_invariants()
    return graph


_SIZES_NEEDED = ("it times ops but holds no transfer sizes; give the model's variables with --variables "
                 "(a profile folder or its meta.json from 'tracetool profile') or --model")


def _tf2_graph(read: Callable[[], ProfilerCapture], variables: ModelVariables | None, path: Path,
               what: str) -> StepGraph:
    if variables is None:
        raise ToolError(f"{path} is {what}: {_SIZES_NEEDED}")
    capture = read()
    traces, meta = tf2_step_traces(capture, variables)
    match = meta.pop("variables_match")
    return build_stepgraph(traces, meta, capture.path, variables_match=match)


def _graph_of_trace_file(path: Path, variables: ModelVariables | None) -> StepGraph:
    """One trace file's graph: TF1 step stats carry their own sizes, TF2 captures take the variables'."""
    refuse_foreign_by_name(path)
    name = path.name.lower()
    if name.endswith(".xplane.pb"):
        return _tf2_graph(lambda: read_xplane(path), variables, path, "a TF2 profiler XPlane capture")
    if name.endswith((".json", ".json.gz")):
        data = load_json(path)
        if is_trace_viewer(data):
            return _tf2_graph(lambda: trace_viewer_capture(data, path), variables, path,
                              "a TF2 profiler trace-viewer file")
        trace = chrome_timeline_from_data(data, path)
    else:
        trace = _read_trace_file(path)
    if variables is not None:
        raise ToolError(f"--variables is for TF2 profiler captures; {path} carries its own transfer sizes, "
                        "leave --variables out")
    return build_stepgraph([trace], None, str(path))


def _read_trace_file(path: Path) -> StepTrace:
    refuse_foreign_by_name(path)
    name = path.name.lower()
    if name.endswith((".pb", ".pbtxt")):
        from tracetool.graph.read_runmetadata import read_runmetadata

        return read_runmetadata(path)
    if name.endswith((".json", ".json.gz")):
        return read_chrome_timeline(path)
    raise ToolError(
        f"{path}: unsupported file type; give a profile folder, a RunMetadata (.pb/.pbtxt), a TensorFlow "
        "Chrome timeline (.json/.json.gz) or a TF2 profiler capture (.xplane.pb/.trace.json.gz)"
    )


def _meta_of_worker_folder(meta: dict[str, Any], folder: Path) -> dict[str, Any]:
    """In worker-<i>/ of a multi-worker profile, the step times are worker i's own."""
    if not folder.name.startswith("worker-") or not folder.name[7:].isdigit():
        return meta
    index = int(folder.name[7:])
    per_worker = meta.get("per_worker", [])
    if index >= len(per_worker):
        return meta
    return {**meta, **{k: v for k, v in per_worker[index].items() if k != "task_index"}}


def build_stepgraph_from_path(path: Path, variables: ModelVariables | None = None) -> StepGraph:
    """Build a step graph from a profile folder, one RunMetadata, one Chrome timeline or, with the
    model's ``variables``, one TF2 profiler capture."""
    if not path.exists():
        raise ToolError(f"{path} does not exist; give a profile folder made by 'tracetool profile' or a trace file")
    if path.is_dir():
        if variables is not None:
            raise ToolError(f"--variables is for TF2 profiler captures; the profile folder {path} carries its own "
                            "transfer sizes, leave --variables out")
        files = sorted(path.glob("step-*.runmeta.pb")) or sorted(path.glob("step-*.timeline.json"))
        if not files and (path / "worker-0").is_dir():
            raise ToolError(f"{path} is a profile of several workers; build one worker's graph: {path / 'worker-0'}")
        if not files:
            raise ToolError(f"{path} holds no step-*.runmeta.pb or step-*.timeline.json; is it a profile folder?")
        meta_path = path / "meta.json"
        if not meta_path.exists() and (path.parent / "meta.json").exists():  # worker-<i>/ of a multi-worker profile
            meta_path = path.parent / "meta.json"
        meta: dict[str, Any] = {}
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except json.JSONDecodeError:
                raise ToolError(f"{meta_path} is not valid JSON; re-run 'tracetool profile'") from None
            meta = _meta_of_worker_folder(meta, path)
        return build_stepgraph([_read_trace_file(f) for f in files], meta, str(path))
    return _graph_of_trace_file(path, variables)
