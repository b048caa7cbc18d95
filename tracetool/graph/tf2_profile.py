"""Turn a TF2 profiler capture and the model's variables into the step traces of a PS worker.

A TF2 capture is one process training on its own: it shows when every op ran, but not which op
fed which, and no parameter ever crosses a network. Run on a parameter-server cluster, the same
step would download each variable before the first op that uses it, upload each gradient when
the op computing it ends, and apply the update on the PS. This module writes those steps down
as ``StepTrace``s, so the graph builder treats them like any traced step:

* **Steps** are the profiler's step markers (``tf.profiler.experimental.Trace(..., step_num=)``,
  which Keras's ``fit`` emits), else the calls of a ``tf.function``.
* **Dependencies** are inferred from time, since the capture has none: an op waits for the op
  that ran before it on its thread and for the op that ended last before it started anywhere
  on its device. Replayed alone, the step keeps its measured schedule; replayed with a slow
  link, everything that ran after a layer's first op waits for that layer's parameters.
* **Variables** are matched to ops by their layer path: ``dense_1/kernel`` belongs to the ops
  whose names hold the component ``dense_1`` (``sequential/dense_1/MatMul``). Its download
  feeds the layer's first forward op; its gradient leaves after the layer's last op under
  ``gradient_tape/`` (or ``gradients/``). A variable no op name matches is downloaded before
  the step's first op and uploaded after its last, the pessimistic choice, and counted in the
  graph's ``source.variables`` so the user sees how well the names matched.
* **PS work**: the capture's forward ``ReadVariableOp``s of a layer become the PS reads of its
  variables. The optimizer's ops (every op under the name scope of the ops that write
  variables outside any layer: ``SGD/...``, ``Adam/...``) become the PS updates: on a PS
  cluster the update runs where the variable lives. Their time in a step is shared among the
  trainable variables by bytes, since the optimizer's names do not say which variable each
  op updates.

* **Host time**: the part of a step's window before its first op and after its last (Python,
  the tf.function call, returning the loss) is kept as two worker ops, ``step/host_before_ops``
  and ``step/host_after_ops``, so one worker replayed on a fast link takes the measured step.

Transfers are untimed: their durations are left to the replay's link, so the graph carries no
link calibration.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from tracetool.errors import ToolError
from tracetool.graph.profiler_events import ProfilerCapture, ProfilerEvent
from tracetool.graph.trace_records import OpRecord, RendezvousPair, StepTrace, TransferInfo
from tracetool.graph.variables_file import ModelVariables, VariableFacts

WORKER = "/job:worker/replica:0/task:0/device"
PS_DEVICE = "/job:ps/replica:0/task:0/device:CPU:0"
_FUNCTION_PLUMBING = frozenset({"_Arg", "_Retval", "_SOURCE", "_SINK"})
_BACKWARD_SCOPES = ("gradient_tape", "gradients")
_HOW_TO_MARK_STEPS = ("wrap each step in tf.profiler.experimental.Trace('train', step_num=i, _r=1), "
                      "or profile Keras's model.fit, which marks its steps")


@dataclass(frozen=True)
class _Op:
    name: str
    op: str
    device: str
    lane: str
    start_us: float
    end_us: float

    @property
    def backward(self) -> bool:
        return any(part in _BACKWARD_SCOPES for part in self.name.split("/"))


@dataclass
class VariableMatch:
    """How the capture's op names matched the model's variables (kept in the graph's source)."""

    variables: int = 0
    downloads_matched: int = 0
    gradients_matched: int = 0
    not_modelled: int = 0  # tables read by rows: a TF2 capture does not say how many rows

    def as_dict(self, source: str) -> dict[str, Any]:
        return {"from": source, "downloaded": self.variables, "first_use_matched": self.downloads_matched,
                "gradient_matched": self.gradients_matched, "read_by_rows_not_modelled": self.not_modelled}


def step_windows(capture: ProfilerCapture) -> list[tuple[float, float]]:
    """The [start, end) of each traced step, from step markers or else tf.function calls."""
    marked: dict[str, list[ProfilerEvent]] = defaultdict(list)
    for event in capture.events:
        if "step_num" in event.stats and event.device.startswith("/host:"):
            marked[str(event.stats["step_num"])].append(event)
    spans = [(min(e.start_us for e in group), max(e.end_us for e in group)) for group in marked.values()]
    if not spans:
        calls = sorted((e.start_us, e.end_us) for e in capture.events if "tf_function_call" in e.stats)
        for start, end in calls:  # outermost calls only: a function may call another
            if not spans or start >= spans[-1][1]:
                spans.append((start, end))
    if not spans:
        raise ToolError(f"{capture.path} has no step markers and no tf.function calls to tell its steps apart; "
                        f"{_HOW_TO_MARK_STEPS}")
    return sorted(spans)


def _worker_device(plane: str) -> str:
    if plane.startswith("/device:"):
        return f"{WORKER}:{plane[len('/device:'):]}"
    return f"{WORKER}:CPU:0"


def _ops_by_step(capture: ProfilerCapture, windows: list[tuple[float, float]]) -> list[list[_Op]]:
    """Each step's ops; a GPU op lasts from its first kernel's start to its last kernel's end."""
    starts = [w[0] for w in windows]
    steps: list[list[_Op]] = [[] for _ in windows]
    kernels: dict[tuple[int, str], list[ProfilerEvent]] = defaultdict(list)
    host_ops: list[tuple[int, ProfilerEvent, tuple[str, str]]] = []
    for event in capture.events:
        named = event.tf_op()
        if named is None or named[1] in _FUNCTION_PLUMBING:
            continue
        index = bisect.bisect_right(starts, event.start_us) - 1
        if index < 0 or event.start_us > windows[index][1]:
            continue
        if event.device.startswith("/device:"):
            kernels[(index, named[0])].append(event)
        else:
            host_ops.append((index, event, named))
    launched = {(i, name) for i, name in kernels}
    for index, event, (name, op) in host_ops:
        if (index, name) in launched:
            continue  # the host side of a GPU op: its time is its kernels'
        steps[index].append(_Op(name, op, _worker_device(event.device), f"thread:{event.lane}",
                                event.start_us, event.end_us))
    for (index, name), events in kernels.items():
        first = min(events, key=lambda e: e.start_us)
        op = first.tf_op()
        assert op is not None
        steps[index].append(_Op(name, op[1], _worker_device(first.device), f"stream:{first.lane}",
                                first.start_us, max(e.end_us for e in events)))
    return steps


def _unique_names(ops: list[_Op]) -> list[_Op]:
    """An op run twice in a step (a loop) keeps both runs: the second is ``name#2``."""
    seen: Counter[str] = Counter()
    named = []
    for op in sorted(ops, key=lambda o: (o.start_us, o.name)):
        seen[op.name] += 1
        count = seen[op.name]
        named.append(op if count == 1 else _Op(f"{op.name}#{count}", op.op, op.device, op.lane, op.start_us,
                                                op.end_us))
    return named


class _ScopeIndex:
    """Finds the most specific variable scope an op name holds as consecutive path components."""

    def __init__(self, variables: list[VariableFacts]) -> None:
        self.scopes = {v.scope for v in variables if v.scope}
        self.longest = max((len(s) for s in self.scopes), default=0)

    def scope_of(self, op_name: str) -> tuple[str, ...] | None:
        parts = op_name.split("#")[0].split("/")
        for length in range(min(self.longest, len(parts)), 0, -1):
            for begin in range(len(parts) - length + 1):
                candidate = tuple(parts[begin: begin + length])
                if candidate in self.scopes:
                    return candidate
        return None


def _time_predecessors(ops: list[_Op]) -> dict[str, list[str]]:
    """Per op: the op before it on its lane, and the op that ended last before it started."""
    preds: dict[str, list[str]] = defaultdict(list)
    by_end = sorted(ops, key=lambda o: o.end_us)
    ends = [o.end_us for o in by_end]
    last_on_lane: dict[tuple[str, str], _Op] = {}
    for op in sorted(ops, key=lambda o: o.start_us):
        lane = (op.device, op.lane)
        if lane in last_on_lane:
            preds[op.name].append(last_on_lane[lane].name)
        last_on_lane[lane] = op
        index = bisect.bisect_right(ends, op.start_us) - 1
        if index >= 0 and by_end[index].name != op.name and by_end[index].name not in preds[op.name]:
            preds[op.name].append(by_end[index].name)
    return preds


_VARIABLE_WRITES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter", "AssignVariableOp",
                    "AssignAddVariableOp", "AssignSubVariableOp")


def optimizer_scope(ops: list[_Op], scopes: _ScopeIndex) -> str | None:
    """The name scope of the optimizer: where the ops that write variables outside any layer live."""
    writers = Counter(op.name.split("/")[0] for op in ops
                      if op.op.startswith(_VARIABLE_WRITES) and not op.backward and "/" in op.name
                      and scopes.scope_of(op.name) is None)
    return writers.most_common(1)[0][0] if writers else None


def _with_host_time(compute: list[_Op], all_ops: list[_Op], window: tuple[float, float]) -> list[_Op]:
    """The step's compute plus its host time before the first op and after the last, when there is any."""
    first = min(compute, key=lambda o: o.start_us)
    last_end = max(o.end_us for o in all_ops)
    device, lane = first.device, "thread:host"
    added = []
    if first.start_us > window[0]:
        added.append(_Op(HOST_BEFORE, "HostTime", device, lane, window[0], first.start_us))
    if window[1] > last_end:
        added.append(_Op(HOST_AFTER, "HostTime", device, lane, last_end, window[1]))
    return compute + added


HOST_BEFORE, HOST_AFTER = "step/host_before_ops", "step/host_after_ops"


def _step_trace(ops: list[_Op], window: tuple[float, float], variables: list[VariableFacts], scopes: _ScopeIndex,
                optimizer: str | None, source_kind: str, path: str) -> StepTrace:
    updates = [o for o in ops if o.name.split("/")[0] == optimizer]
    reads_by_scope: dict[tuple[str, ...], list[_Op]] = defaultdict(list)
    compute: list[_Op] = []
    for op in ops:
        if op.name.split("/")[0] == optimizer:
            continue
        scope = scopes.scope_of(op.name)
        if op.op == "ReadVariableOp" and not op.backward and scope is not None:
            reads_by_scope[scope].append(op)
            continue
        compute.append(op)
    if not compute:
        raise ToolError(f"{path}: a step holds no ops besides variable reads and updates")
    compute = _with_host_time(compute, ops, window)
    step_start = min(window[0], min(o.start_us for o in ops))
    first_forward: dict[tuple[str, ...], _Op] = {}
    last_backward: dict[tuple[str, ...], _Op] = {}
    for op in sorted(compute, key=lambda o: o.start_us):
        scope = scopes.scope_of(op.name)
        if scope is None:
            continue
        if op.backward:
            if scope not in last_backward or op.end_us >= last_backward[scope].end_us:
                last_backward[scope] = op
        elif scope not in first_forward:
            first_forward[scope] = op
    step_first = min(compute, key=lambda o: o.start_us)
    step_last = max(compute, key=lambda o: o.end_us)
    all_reads = [r.end_us - r.start_us for group in reads_by_scope.values() for r in group]
    typical_read_us = statistics.median(all_reads) if all_reads else 0.0
    update_us = sum(o.end_us - o.start_us for o in updates)
    writes = [o.op for o in updates if o.op.startswith(_VARIABLE_WRITES)]
    update_type = Counter(writes).most_common(1)[0][0] if writes else "ResourceApplyGradientDescent"
    trained_bytes = sum(v.bytes for v in variables if v.trainable) or 1

    preds = _time_predecessors(compute)
    extra_inputs: dict[str, list[str]] = defaultdict(list)
    records: list[OpRecord] = []
    pairs: list[RendezvousPair] = []
    read_cursor: Counter[tuple[str, ...]] = Counter()
    for var in variables:
        reader = first_forward.get(var.scope, step_first)
        read_name = f"{var.name}/read"
        group = reads_by_scope.get(var.scope, [])
        read_us = (group[read_cursor[var.scope]].end_us - group[read_cursor[var.scope]].start_us
                   if read_cursor[var.scope] < len(group) else typical_read_us)
        read_cursor[var.scope] += 1
        records.append(OpRecord(PS_DEVICE, read_name, "ReadVariableOp", step_start, read_us, "thread:ps"))
        rendezvous = f"edge_{read_name}"
        records.append(OpRecord(reader.device, rendezvous, "RecvTensor", step_start + read_us, 0.0, "transfer",
                                transfer=TransferInfo(var.bytes, rendezvous, PS_DEVICE, reader.device)))
        pairs.append(RendezvousPair(rendezvous, PS_DEVICE, reader.device, read_name, read_name))
        extra_inputs[reader.name].append(read_name)
        if not var.trainable:
            continue
        producer = last_backward.get(var.scope, step_last)
        grad_name = f"gradients/{var.name}/grad"
        upload = f"edge_{grad_name}"
        records.append(OpRecord(producer.device, upload, "RecvTensor", producer.end_us, 0.0, "transfer",
                                transfer=TransferInfo(var.bytes, upload, producer.device, PS_DEVICE)))
        pairs.append(RendezvousPair(upload, producer.device, PS_DEVICE, producer.name, grad_name))
        records.append(OpRecord(PS_DEVICE, f"{var.name}/update", update_type, producer.end_us,
                                update_us * var.bytes / trained_bytes, "thread:ps", (grad_name,)))
    for op in compute:
        records.append(OpRecord(op.device, op.name, op.op, op.start_us, op.end_us - op.start_us, op.lane,
                                tuple(preds.get(op.name, ())) + tuple(extra_inputs.get(op.name, ()))))
    return StepTrace(tuple(records), tuple(pairs), source_kind, path)


def tf2_step_traces(capture: ProfilerCapture, model_variables: ModelVariables) -> tuple[list[StepTrace],
                                                                                         dict[str, Any]]:
    """The capture's steps as PS-worker step traces, and the model facts and match counts for the graph."""
    windows = step_windows(capture)
    steps = [_unique_names(ops) for ops in _ops_by_step(capture, windows)]
    kept = [(w, ops) for w, ops in zip(windows, steps, strict=True) if ops]
    if not kept:
        raise ToolError(f"{capture.path} has steps but no TensorFlow op events in them; was the profiler's "
                        "host tracer off (ProfilerOptions host_tracer_level=0)?")
    variables = [v for v in model_variables.variables if v.downloaded]
    match = VariableMatch(variables=len(variables),
                          not_modelled=sum(1 for v in model_variables.variables if v.by_rows))
    scopes = _ScopeIndex(variables)
    ops_seen = [op for _, ops in kept for op in ops]
    forward_scopes = {scopes.scope_of(o.name) for o in ops_seen if not o.backward}
    backward_scopes = {scopes.scope_of(o.name) for o in ops_seen if o.backward}
    match.downloads_matched = sum(1 for v in variables if v.scope and v.scope in forward_scopes)
    match.gradients_matched = sum(1 for v in variables if v.trainable and v.scope and v.scope in backward_scopes)
    if variables and match.downloads_matched == 0:
        raise ToolError(f"{capture.path}: no op name holds the layer path of any of the {len(variables)} variables "
                        f"of {model_variables.source} (e.g. {variables[0].name!r}); are they the same model?")
    optimizer = optimizer_scope(ops_seen, scopes)
    traces = [_step_trace(ops, window, variables, scopes, optimizer, capture.source_kind, capture.path)
              for window, ops in kept]
    step_times = [(end - start) / 1e6 for (start, end), _ in kept]
    meta: dict[str, Any] = {
        **model_variables.model,
        "parameter_bytes": sum(v.bytes for v in variables),
        "parameter_count": sum(v.bytes // 4 for v in variables),
        "traced_step_time_s": {"mean": statistics.fmean(step_times),
                               "std": statistics.pstdev(step_times) if len(step_times) > 1 else 0.0,
                               "samples": step_times},
        "variables_match": {**match.as_dict(model_variables.source), "optimizer_scope": optimizer or ""},
    }
    return traces, meta
