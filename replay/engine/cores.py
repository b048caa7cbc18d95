"""Worker compute sharing one machine's cores: what a local validation run adds to the model.

A real PS cluster gives each worker its own machine, and the replay's compute ops hold only their
worker's lane. When a validation runs every worker on one machine, their compute shares that
machine's few cores: with more ops running than cores, each op advances at ``cores / running``
of its profiled speed (processor sharing; an op uses at most one core, as each worker's
TensorFlow session runs one op at a time on one intra-op thread). The local PS's ops share the
cores too. resnet on two cores at three workers measured 5.2-6.0 steps/s where its TensorFlow
probe, whose compute is sleeps, ran 6.0-7.7, with only 1.2 of the 2 cores busy on average: the
workers' compute arrives in bursts, so the means do not show the contention, and a correction
by mean utilization would not either. This module is that processor, for the event loop
(``replay.engine.loop``).
"""

from __future__ import annotations

import heapq
import math

INF = math.inf


class SharedCores:
    """Processor sharing of ``cores`` cores among running compute ops, each at most one core,
    with one virtual clock: the seconds of work each running op has received since the cores
    were last idle. An op of ``work_s`` seconds started at virtual time v ends when the clock
    reaches v + work_s."""

    __slots__ = ("cores", "clock", "t_last", "running", "seq")

    def __init__(self, cores: int) -> None:
        if cores < 1:
            raise ValueError(f"shared cores must be at least 1, got {cores}")
        self.cores = cores
        self.clock = 0.0
        self.t_last = 0.0
        self.running: list[tuple[float, int, int, int]] = []  # (finish tag, seq, worker, node)
        self.seq = 0

    def _speed(self) -> float:
        """Each running op's speed, in seconds of work per second."""
        running = len(self.running)
        return 1.0 if running <= self.cores else self.cores / running

    def _advance(self, now: float) -> None:
        if self.running:
            self.clock += (now - self.t_last) * self._speed()
        self.t_last = now

    def add(self, now: float, worker: int, node: int, work_s: float) -> float:
        """Start an op of ``work_s`` seconds of work; returns when the next op ends."""
        self._advance(now)
        self.seq += 1
        heapq.heappush(self.running, (self.clock + work_s, self.seq, worker, node))
        return self.next_time()

    def next_time(self) -> float:
        """When the op closest to done ends, if nothing starts before then."""
        if not self.running:
            return INF
        return self.t_last + (self.running[0][0] - self.clock) / self._speed()

    def pop_finished(self, now: float) -> list[tuple[int, int]]:
        """The ops that have ended by ``now``, as (worker, node)."""
        self._advance(now)
        running = self.running
        limit = self.clock + 1e-12 * max(1.0, abs(self.clock))
        done = []
        while running and running[0][0] <= limit:
            _, _, worker, node = heapq.heappop(running)
            done.append((worker, node))
        if not done and running and self.next_time() <= now:
            # the clock cannot resolve what is left of this op: it is finished
            _, _, worker, node = heapq.heappop(running)
            done.append((worker, node))
        if not running:
            self.clock = 0.0
        return done
