"""The probe's compute as the step graph's own dependencies: groups of ops, not a chain of stages.

Why: the chain of ``probe_schedule`` runs each stage after the one before, so none of its compute
runs while a tensor it does not need is still arriving. TensorFlow's executor runs whatever op is
ready. With little compute against the transfers the difference is small; with much it is most of
the step. inception at 25mbit behind 100 ms, profiled on a CPU where its step computes 155 ms
against about 200 ms of transfer each way: the model ran one worker at 2.28 steps/s, the chain
twin at 1.96 and, at two workers, 3.00 against the model's 3.69; the fit charged the gap to the
link and under-predicted two workers by 18.9% (docs/network-probe.md, "Profiled on today's
slower CPU, the twin is no twin").

So this twin keeps the worker's compute graph: every compute op of the step graph belongs to one
group, a group waits for the groups its ops read from and for the downloads its ops read, and
computes its ops' busy time (durations and scheduling gaps, times the replay's calibration
scale). Groups are the graph's chains contracted: an op joins its predecessor when it is that
op's only successor, it reads from nothing else, it reads no download, and the predecessor sends
no gradient (a gradient must leave when its op is done, not after the ops that follow). Each
gradient leaves once the group whose op produced it is done (uploads matched to the download
tensors by size, in the order they left, as ``probe_schedule`` does).

Measured at that point from the same graph, in turns with the model: one worker 2.25 and 2.26
steps/s (the model 2.29 and 2.25; the chain 1.96), two workers 3.72, 3.29 and 4.07 (the model
3.45, 4.15 and 3.15; the chain 3.00), once the twin's groups shorter than a call of them were
folded and its waits made precise (``fold_short_groups``, ``probe_model``); validated with it
(``tracetool validate --twin-shape graph``), two workers were predicted 0.3% low, where the chain
had them 18.9% low.

Some downloads wait for an upload: an embedding lookup runs on the PS next to its table, so the
PS takes the batch's ids from the worker before it sends the rows (widedeep: 2 KB of ids up,
then 33 KB of rows down). The twin pulls a worker tensor of that size into the PS op that makes
such a download (``pull_bytes``), after the group that produced it, because behind a deep buffer
the round trip is what the step waits for: the PS's request waits behind the other workers'
parameters, the ids behind their gradients. Without it widedeep's twin ran two workers at 2.55 to
2.61 steps/s behind CUBIC's 100 ms at 10mbit, the model at 2.39 to 2.44 (in turns, nothing else
differing: the lone worker 1.39 against 1.37 and 1.39), and the prediction, fitted to the twin,
would have read the model some 6% high; with the ids pulled first the twin ran 2.44 and 2.46
against the model's 2.40 to 2.44, and the point reads +1.1% there.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import networkx as nx

from tracetool.graph.stepgraph import PS_COMPUTE, UPLOAD
from tracetool.measure.probe_schedule import probe_tensors, release_order


@dataclass(frozen=True)
class GraphSchedule:
    """The probe's step: tensor ``i`` of ``tensor_bytes`` is downloaded; group ``g`` computes
    ``group_compute_s[g]`` once the groups in ``group_inputs[g]`` (all of lower index) are done
    and the tensors whose ``gates`` list holds ``g`` have arrived; tensor ``i``'s gradient leaves
    once group ``release_group[i]`` is done (-1: once every group is). The PS takes worker
    tensor ``p`` of ``pull_bytes`` once group ``pull_group[p]`` is done (-1: at the step's start)
    and sends tensor ``i`` only once it has taken the tensors ``pulled_by[i]`` (empty: none)."""

    tensor_bytes: tuple[int, ...]
    gates: tuple[tuple[int, ...], ...]
    group_inputs: tuple[tuple[int, ...], ...]
    group_compute_s: tuple[float, ...]
    release_group: tuple[int, ...]
    pull_bytes: tuple[int, ...] = ()
    pull_group: tuple[int, ...] = ()
    pulled_by: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if len(self.pull_group) != len(self.pull_bytes):
            raise ValueError(f"{len(self.pull_bytes)} pulled tensors but {len(self.pull_group)} groups producing them")
        if self.pulled_by and len(self.pulled_by) != len(self.tensor_bytes):
            raise ValueError(f"pulled_by names {len(self.pulled_by)} tensors, the step downloads "
                             f"{len(self.tensor_bytes)}")
        if any(not 0 <= p < len(self.pull_bytes) for pulls in self.pulled_by for p in pulls):
            raise ValueError(f"pulled_by names a pulled tensor outside 0..{len(self.pull_bytes) - 1}")

    def pulls_of(self, tensor: int) -> tuple[int, ...]:
        """The worker tensors the PS takes before it sends ``tensor``."""
        return self.pulled_by[tensor] if self.pulled_by else ()

    @property
    def compute_s(self) -> float:
        return sum(self.group_compute_s)


def graph_schedule(graph: Any, compute_scale: float = 1.0) -> GraphSchedule:
    """The graph-shaped schedule of ``graph`` (a StepGraph), its op times scaled by ``compute_scale``
    (the replay's calibration: the twin computes what the model computes untraced)."""
    if not compute_scale >= 0.0:
        raise ValueError(f"compute_scale must be at least 0, got {compute_scale}")
    nodes = graph.nodes
    downloads = probe_tensors(graph)
    computes = [n.id for n in nodes if n.kind == "compute"]
    whole = graph.to_networkx()
    # the worker's compute ops among themselves (a step graph is acyclic: check_invariants)
    ops = nx.DiGraph(whole.subgraph(computes))
    download_readers: dict[int, set[int]] = defaultdict(set)
    senders: dict[int, int] = {}  # upload node -> the compute op that produced it
    for edge in graph.edges:
        if nodes[edge.src].kind == "download" and edge.dst in ops:
            download_readers[edge.src].add(edge.dst)
        elif edge.src in ops and nodes[edge.dst].kind == "upload":
            senders[edge.dst] = edge.src
    pulls_by_download = {d: _pulled_uploads(whole, nodes, d) for d in downloads}
    pulls = sorted({u for found in pulls_by_download.values() for u in found},
                   key=lambda u: (nodes[u].start_offset_us, u))
    # a download's readers run after what the PS took for it was produced, so the groups' order
    # (and the twin's build) has the producer first
    ops.add_edges_from((senders[u], reader) for d, found in pulls_by_download.items() for u in found
                       if u in senders for reader in download_readers[d])
    reads_download = {op for readers in download_readers.values() for op in readers}
    sends = set(senders.values())

    order = list(nx.lexicographical_topological_sort(ops, key=lambda op: (nodes[op].start_offset_us, op)))
    group_of: dict[int, int] = {}
    members: list[list[int]] = []
    for op in order:
        preds = list(ops.predecessors(op))
        # a chain's next op joins its group; once its op has more successors, the group ends
        if len(preds) == 1 and ops.out_degree(preds[0]) == 1 and op not in reads_download \
                and preds[0] not in sends:
            group_of[op] = group_of[preds[0]]
            members[group_of[op]].append(op)
            continue
        group_of[op] = len(members)
        members.append([op])

    busy_us = _busy_shares(nodes, order)
    group_inputs = tuple(tuple(sorted({group_of[p] for op in group for p in ops.predecessors(op)} - {g}))
                         for g, group in enumerate(members))
    releases = release_order(graph, downloads, skip=frozenset(pulls))
    pull_index = {u: p for p, u in enumerate(pulls)}
    return GraphSchedule(
        tensor_bytes=tuple(nodes[i].bytes for i in downloads),
        gates=tuple(tuple(sorted({group_of[op] for op in download_readers[i]})) for i in downloads),
        group_inputs=group_inputs,
        group_compute_s=tuple(compute_scale * sum(busy_us[op] for op in group) / 1e6 for group in members),
        release_group=tuple(group_of[senders[u]] if u is not None and u in senders else -1 for u in releases),
        pull_bytes=tuple(nodes[u].bytes for u in pulls),
        pull_group=tuple(group_of[senders[u]] if u in senders else -1 for u in pulls),
        pulled_by=tuple(tuple(sorted(pull_index[u] for u in pulls_by_download[d])) for d in downloads) if pulls else (),
    )


def _pulled_uploads(whole: nx.DiGraph, nodes: list[Any], download: int) -> set[int]:
    """The uploads the PS takes before it can send ``download``: those reached from it backwards
    through the PS's own ops only (an embedding lookup's ids), not through the worker's."""
    found: set[int] = set()
    stack = [p for p in whole.predecessors(download) if nodes[p].kind == PS_COMPUTE]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for p in whole.predecessors(node):
            if nodes[p].kind == UPLOAD:
                found.add(p)
            elif nodes[p].kind == PS_COMPUTE and p not in seen:
                seen.add(p)
                stack.append(p)
    return found


def _busy_shares(nodes: list[Any], ops: list[int]) -> dict[int, float]:
    """Each op's share of the worker's busy time (``probe_schedule``'s: its duration from its
    scheduling gap on), the time no op before it in the profiled step already covers, so that
    the groups together compute what the chain's stages do."""
    spans = sorted((nodes[op].start_offset_us - nodes[op].gap_us,
                    nodes[op].start_offset_us + nodes[op].duration.mean_us, op) for op in ops)
    shares: dict[int, float] = {}
    covered = float("-inf")
    for start, end, op in spans:
        shares[op] = max(0.0, end - max(start, covered))
        covered = max(covered, end)
    return shares


def fold_short_groups(schedule: GraphSchedule, min_compute_s: float) -> GraphSchedule:
    """``schedule`` with every group shorter than ``min_compute_s`` that sends nothing (no
    gradient, no tensor the PS pulls) folded into the groups after it.

    Why: each group of the twin is one call of a Python function from TensorFlow's executor,
    which costs a call whatever the group computes (about 0.1 ms, on this machine's slower days
    0.2 ms), and most of a step graph's ops compute far less: 145 of inception's 256 groups under
    0.05 ms, 1 ms of its 155. Waited for one call each, they added some 20 ms a step that the
    model does not have. A folded group's successors wait for its inputs and for the tensors it
    waited for instead, so every group still waits for all it waited for, through the same
    tensors and groups; its compute moves to the first of them. A group no other waits for (40 of
    inception's 256, 19 of them short) passes its compute to the last group it waits for instead,
    and the tensors it waited for are waited for by their own gradients only; one on its own
    passes it to the next group. So the step computes what it did."""
    if not min_compute_s >= 0.0:
        raise ValueError(f"min_compute_s must be at least 0, got {min_compute_s}")
    count = len(schedule.group_compute_s)
    senders = set(schedule.release_group) | set(schedule.pull_group)  # both must end where their op does
    inputs = [set(i) for i in schedule.group_inputs]
    gated_by: list[set[int]] = [set() for _ in range(count)]  # group -> the tensors it waits for
    for tensor, groups in enumerate(schedule.gates):
        for g in groups:
            gated_by[g].add(tensor)
    compute = list(schedule.group_compute_s)
    successors: list[set[int]] = [set() for _ in range(count)]
    for g in range(count):
        for i in inputs[g]:
            successors[i].add(g)
    folded: set[int] = set()
    for g in range(count):  # in index order: a group's inputs are settled before it is looked at
        if compute[g] >= min_compute_s or g in senders:
            continue
        folded.add(g)
        after = sorted(successors[g])
        if after:
            compute[after[0]] += compute[g]
        elif inputs[g]:
            compute[max(inputs[g])] += compute[g]
        elif g + 1 < count:  # on its own: the executor's one thread runs it beside nothing anyway
            compute[g + 1] += compute[g]
        else:
            compute[max(set(range(count)) - folded, default=g)] += compute[g]
        for s in after:
            inputs[s].discard(g)
            inputs[s] |= inputs[g]
            gated_by[s] |= gated_by[g]
        for i in inputs[g]:
            successors[i].discard(g)
            successors[i] |= successors[g]
    kept = tuple(g for g in range(count) if g not in folded)
    index = {g: k for k, g in enumerate(kept)}
    gates = tuple(tuple(sorted(index[g] for g in kept if tensor in gated_by[g]))
                  for tensor in range(len(schedule.tensor_bytes)))
    return GraphSchedule(
        tensor_bytes=schedule.tensor_bytes,
        gates=gates,
        group_inputs=tuple(tuple(sorted(index[i] for i in inputs[g])) for g in kept),
        group_compute_s=tuple(compute[g] for g in kept),
        release_group=tuple(index[g] if g >= 0 else -1 for g in schedule.release_group),
        pull_bytes=schedule.pull_bytes,
        pull_group=tuple(index[g] if g >= 0 else -1 for g in schedule.pull_group),
        pulled_by=schedule.pulled_by,
    )


def widest_level(schedule: GraphSchedule) -> int:
    """The most groups that lie equally deep in ``schedule`` (as many groups before them on their
    longest chain of inputs): no path joins them, so all of them can be ready at once, and each
    holds one of the worker's inter-op threads while it waits for a core (``probe_model``)."""
    depth: list[int] = []
    for inputs in schedule.group_inputs:  # inputs have lower indices: their depths are known
        depth.append(1 + max((depth[i] for i in inputs), default=-1))
    return max(Counter(depth).values(), default=0)
