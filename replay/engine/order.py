"""Transfer-order policies: which waiting transfer a link serves next.

A policy is a small object whose ``ranker(compiled, rng)`` returns ``key(step_start_s, node)``;
the link serves the waiting transfer with the smallest key. Every key starts with the start time
of the worker step the transfer belongs to, so older steps are served first across workers and
the policy decides the order within a step:

``trace``     as recorded in the profile (by ``start_offset_us``);
``random``    a fresh random order (TensorFlow's gRPC order is effectively arbitrary), seeded;
``priority``  parameters needed first are sent first (TicTac / P3): a download ranks by the
              earliest start of its first consumer in a contention-free one-worker schedule
              (lanes serial, transfers instant); an upload by when its gradient is produced.

Order matters only when a link has to choose: always under ``fifo``, and under ``fair`` when
the number of concurrent streams is capped.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from typing import Any

from replay.engine.compiled import KIND_COMPUTE, KIND_DOWNLOAD, KIND_PS, KIND_UPLOAD, CompiledGraph

Ranker = Callable[[float, int], Any]


class OrderPolicy:
    name = "base"

    def ranker(self, compiled: CompiledGraph, rng: random.Random) -> Ranker:
        raise NotImplementedError


class TraceOrder(OrderPolicy):
    name = "trace"

    def ranker(self, compiled: CompiledGraph, rng: random.Random) -> Ranker:
        ranks = compiled.trace_rank
        return lambda step_start_s, node: (step_start_s, ranks[node])


class RandomOrder(OrderPolicy):
    name = "random"

    def ranker(self, compiled: CompiledGraph, rng: random.Random) -> Ranker:
        draw = rng.random
        return lambda step_start_s, node: (step_start_s, draw())


class PriorityOrder(OrderPolicy):
    name = "priority"

    def ranker(self, compiled: CompiledGraph, rng: random.Random) -> Ranker:
        ranks = first_use_ranks(compiled)
        return lambda step_start_s, node: (step_start_s, ranks[node])


ORDER_POLICIES: dict[str, type[OrderPolicy]] = {"trace": TraceOrder, "random": RandomOrder, "priority": PriorityOrder}


def order_policy(name: str | OrderPolicy) -> OrderPolicy:
    if isinstance(name, OrderPolicy):
        return name
    try:
        return ORDER_POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown order policy '{name}'; choose from {', '.join(ORDER_POLICIES)}") from None


def contention_free_starts_us(compiled: CompiledGraph) -> list[float]:
    """Start time of every node when one worker runs alone with instant transfers.

    Ops on one lane run one at a time, ready ops in trace order; this is the order in which the
    worker would use its parameters if they were all there.
    """
    n = compiled.n
    pending = list(compiled.indegree)
    start = [0.0] * n
    lane_free: dict[tuple[int, int], float] = {}
    events: list[tuple[float, int, int]] = [(0.0, compiled.trace_rank[compiled.start], compiled.start)]
    while events:
        ready_at, _, i = heapq.heappop(events)
        kind = compiled.kind[i]
        if kind in (KIND_COMPUTE, KIND_PS):
            key = (kind, compiled.lane[i])
            begin = max(ready_at, lane_free.get(key, 0.0))
            finish = begin + compiled.gap_us[i] + compiled.mean_us[i]
            lane_free[key] = finish
        else:
            begin = finish = ready_at
        start[i] = begin
        for s in compiled.successors[i]:
            pending[s] -= 1
            if pending[s] == 0:
                heapq.heappush(events, (finish, compiled.trace_rank[s], s))
    return start


def first_use_ranks(compiled: CompiledGraph) -> list[float]:
    """Rank of each transfer for the priority order (smaller is sent first)."""
    start = contention_free_starts_us(compiled)
    ranks = [0.0] * compiled.n
    for i in range(compiled.n):
        if compiled.kind[i] == KIND_DOWNLOAD:
            consumers = compiled.successors[i]
            ranks[i] = min((start[s] for s in consumers), default=start[i])
        elif compiled.kind[i] == KIND_UPLOAD:
            ranks[i] = start[i]
    return ranks
