"""Link-sharing models: how one direction of the PS link serves concurrent transfers.

A sharing model is a small policy object; ``new_link`` gives the per-direction state the event
loop drives through these calls:

- ``add(now, key, worker, node, bits) -> next_time()``: a transfer asks for the link; ``key``
  (from the order policy) decides which waiting transfer is served next when the model must choose;
- ``next_time()``: when the earliest transfer in service will finish (``inf`` if none);
- ``pop_finished(now)``: the ``(worker, node)`` transfers that finish at ``now``;
- ``served_bits(now)``: bits carried so far, for utilization;
- ``set_capacity(now, bits_per_s)``: the direction's capacity changes from ``now`` on (the
  other direction's ACKs take part of the line while it carries data; TCP losses take a share
  while several connections send at once);
- ``connections()``: how many workers' connections have data in flight on this direction.

Models:

``fair``  TensorFlow moves every tensor between a worker and the PS over one gRPC channel, one
          TCP connection per worker. Connections share the PS interface max-min fairly, each
          capped by its worker's own interface; all workers' interfaces are equal, so every
          active connection gets ``min(worker_capacity, capacity / active_connections)``. The
          transfers of one connection share it equally (HTTP/2 streams). Because all active
          connections get the same rate, one global clock ``G`` (service per connection) and a
          virtual clock per connection (service per transfer) make every arrival and departure
          O(log n): a connection's next finish is fixed in ``G`` until that connection changes.
          ``max_streams`` caps how many transfers the PS serves at once; the rest wait, and the
          order policy picks who goes next.
``fair-per-transfer``  Max-min fairness per transfer instead of per connection (every tensor
          its own flow), with the workers' interfaces as a second bottleneck.
``fifo``  One transfer at a time per direction, at the slower of the two interfaces; the order
          policy picks the next one.
``seniority`` (default)  Connections weighted by age in both directions: the connection that has
          been sending longest gets ``seniority`` times the weight of the next oldest, and so on
          (weights ``s^0, s^-1, ...``, shares proportional to weight, each capped by its worker's
          interface). Each direction of the PS link ends in a drop-tail queue (a switch port; here
          a tbf qdisc) shared by loss-based TCP connections: one joining a busy direction starts
          from a small window and needs longer to win its share than a transfer of a few hundred
          ms lasts, so the incumbent keeps most of the link. The effect: workers fall into turns
          on the link (one downloads while another uploads), as measured clusters do (steps of two
          workers start half a step apart), instead of drifting at random as under ``fair``.
          Downloads were first modelled as fair (they all leave the PS host); the network probe
          (``benchmarks/network_baseline.py``) shows both directions behaving alike (three workers:
          mean download and upload spans 203 and 200 ms), and fair downloads keep two workers
          that once started together in lock-step far longer than real ones stay
          (``fair_downloads=True`` keeps that model for comparison). Steady-state results hardly
          depend on the value above 1.5.
          ``overtake``: the chance that a connection joining a busy direction wins the race for
          the queue instead of queueing behind the incumbents (its slow start fills the queue, an
          incumbent takes the losses and halves its window). It then ranks ahead of a random
          number (at least one) of them. Without it the turns of three workers settle into a
          perfect pipeline that keeps both directions busy; real connections take the lead from
          each other now and then, so at times all workers transfer in one direction while the
          other idles (the network probe: 8 to 16% of the time with three workers, next to none
          with two). How often depends on how long a step's transfers take: three TensorFlow
          workers moving 0.1 s per direction lost 10-15% of the link to bunching, those moving
          0.4-0.8 s kept their pipeline in every run. So the chance is
          ``min(overtake, overtake_time_s / T)``, with ``T`` the time one step's transfers in that
          direction take alone on the link (``overtake_time_s`` infinite: a constant chance). Both
          are fitted to measured clusters (``benchmarks/overtake_fit.py``); the network probe
          fits a constant for short transfers but keeps bunching for long ones where TensorFlow
          does not.

Unequal worker interfaces (``worker_capacity_bps`` a list, one cap per worker): ``fair`` becomes
the seniority link with equal weights (per-connection max-min fairness by water-filling), and
the seniority and per-transfer links fill water around each worker's own cap; ``fifo`` serves
each transfer at the slower of the PS link and its worker's interface. With one cap for every
worker (a number) every model takes its equal-cap path, unchanged.

Models do not know about workers' steps, durations or lanes; the engine owns those.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import Any

INF = math.inf
Caps = float | list[float]  # one interface cap for every worker, or one per worker

# The default model. Measured clusters take turns on the link, which ``seniority`` reproduces and
# ``fair`` never does: over 49 validation points with the CPU not the bottleneck, median |error|
# 2.0% against 18.1% (docs/measure.md).
DEFAULT_SHARING = "seniority"

# Weight of a connection relative to the next younger one under ``seniority`` sharing.
# Predictions of the zoo's graphs change by under 4% between 1.5 and 10 once workers have fallen
# into turns, so the value matters little; 2 means the older of two connections gets two thirds.
DEFAULT_SENIORITY = 2.0

# Chance that a connection joining a busy direction overtakes the incumbents: at most
# DEFAULT_OVERTAKE, and DEFAULT_OVERTAKE_TIME_S over the time one step's transfer in that direction
# takes alone on the link. Fitted to the zoo's measured clusters, leaving one model out at a time
# (benchmarks/overtake_fit.py; docs/replay.md).
DEFAULT_OVERTAKE = 0.4
DEFAULT_OVERTAKE_TIME_S = 0.04

# Connections that join a direction together, as a synchronous update's tokens release them, do
# not take turns: traced SyncReplicasOptimizer clusters share each direction nearly fairly among
# them, the first joiner a little ahead (42% of the link among three, against 33% fair and 57%
# under seniority; benchmarks/sync_cycles.py). Connections joining within DEFAULT_JOIN_WINDOW_S of
# a group's first form one group; groups keep seniority among themselves and the first joiner
# weighs DEFAULT_LEADER_WEIGHT times each other member. The leader's weight is the traced share;
# the window was chosen on the synchronous validation table (docs/replay.md, "Released groups").
# Used by default for disciplines whose updates release workers together (sync, backup, cutoff).
DEFAULT_JOIN_WINDOW_S = 0.5
DEFAULT_LEADER_WEIGHT = 1.5


class SharingModel:
    """Interface of a sharing policy: a name and a factory of per-direction link state."""

    name = "base"

    def new_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        raise NotImplementedError

    def new_download_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int,
                          rng: random.Random | None = None, transfer_s: float | None = None) -> Any:
        """The PS-to-workers direction; the same policy as uploads unless a model says otherwise.
        ``rng`` serves models with random events; each replay seed passes its own. ``transfer_s``
        is how long one step's transfers in this direction take alone on the link."""
        return self.new_link(capacity_bps, worker_capacity_bps, n_workers)

    def new_upload_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int,
                        rng: random.Random | None = None, transfer_s: float | None = None) -> Any:
        """The workers-to-PS direction."""
        return self.new_link(capacity_bps, worker_capacity_bps, n_workers)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class FairSharing(SharingModel):
    """Max-min fair sharing between workers' connections; transfers of one connection share it equally."""

    name = "fair"

    def __init__(self, max_streams: int | None = None) -> None:
        if max_streams is not None and max_streams < 1:
            raise ValueError("max_streams must be at least 1")
        self.max_streams = max_streams

    def new_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        if isinstance(worker_capacity_bps, list):  # unequal interfaces: equal weights, water-filled
            return _SeniorityLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams, 1.0)
        return _ConnectionFairLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "max_streams": self.max_streams}


class TransferFairSharing(FairSharing):
    """Max-min fair sharing with every transfer its own flow, across the PS and workers' interfaces."""

    name = "fair-per-transfer"

    def new_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        if not isinstance(worker_capacity_bps, list) and worker_capacity_bps >= capacity_bps:
            return _SharedProcessorLink(capacity_bps, self.max_streams)
        return _MaxMinLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams)


class FifoSharing(SharingModel):
    """One transfer at a time per direction."""

    name = "fifo"

    def new_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        return _FifoLink(capacity_bps, worker_capacity_bps)


class SenioritySharing(FairSharing):
    """Both directions weighted between workers' connections, the oldest weighted most."""

    name = "seniority"

    def __init__(self, seniority: float = DEFAULT_SENIORITY, max_streams: int | None = None,
                 overtake: float = 0.0, fair_downloads: bool = False, overtake_time_s: float = INF,
                 join_window_s: float = 0.0, leader_weight: float = 1.0) -> None:
        if not (math.isfinite(join_window_s) and join_window_s >= 0.0):
            raise ValueError(f"--join-window must be a number of seconds of at least 0 (0: no released groups), "
                             f"got {join_window_s:g}")
        if not (math.isfinite(leader_weight) and leader_weight > 0.0):
            raise ValueError(f"--leader-weight must be a positive number (1: a group shares fairly), "
                             f"got {leader_weight:g}")
        if not (math.isfinite(seniority) and seniority >= 1.0):
            raise ValueError(f"--seniority must be a number of at least 1 (1 is fair sharing), got {seniority}")
        if not 0.0 <= overtake <= 1.0:
            raise ValueError(f"--overtake must be a probability in [0, 1], got {overtake:g}")
        if not overtake_time_s > 0.0:
            raise ValueError(f"--overtake-time must be a positive number of seconds (inf: a constant chance), "
                             f"got {overtake_time_s:g}")
        super().__init__(max_streams)
        self.seniority = seniority
        self.overtake = overtake
        # The earlier model, kept for comparison: downloads shared fairly, seniority on uploads only.
        self.fair_downloads = fair_downloads
        self.overtake_time_s = overtake_time_s
        self.join_window_s = join_window_s  # 0: every connection is its own group (plain seniority)
        self.leader_weight = leader_weight

    def overtake_chance(self, transfer_s: float | None) -> float:
        """The chance for one direction whose step transfers take ``transfer_s`` alone.

        Measured clusters with long transfers keep their pipeline far more steadily than short
        ones: three workers moving 0.4-0.8 s per direction per step held the link 95-98% busy in
        every run, those moving 0.1 s lost 10-15% to bunching. A constant chance per join cannot
        give both; one that falls as ``overtake_time_s / transfer_s`` does (docs/replay.md)."""
        if transfer_s is None or transfer_s <= 0.0 or math.isinf(self.overtake_time_s):
            return self.overtake
        return min(self.overtake, self.overtake_time_s / transfer_s)

    def new_download_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int,
                          rng: random.Random | None = None, transfer_s: float | None = None) -> Any:
        if self.fair_downloads:
            return super().new_link(capacity_bps, worker_capacity_bps, n_workers)
        return self._seniority_link(capacity_bps, worker_capacity_bps, n_workers, rng, transfer_s)

    def new_upload_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int,
                        rng: random.Random | None = None, transfer_s: float | None = None) -> Any:
        return self._seniority_link(capacity_bps, worker_capacity_bps, n_workers, rng, transfer_s)

    def _seniority_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int,
                        rng: random.Random | None, transfer_s: float | None) -> Any:
        if self.join_window_s > 0.0:
            return self._join_group_link(capacity_bps, worker_capacity_bps, n_workers)
        chance = self.overtake_chance(transfer_s)
        if chance > 0.0 and rng is None:
            raise ValueError("seniority sharing with overtaking needs a random generator")
        return _SeniorityLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams, self.seniority,
                              chance, rng)

    def _join_group_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        return _JoinGroupLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams, self.seniority,
                              self.join_window_s, self.leader_weight)

    def new_link(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int) -> Any:
        if self.join_window_s > 0.0:
            return self._join_group_link(capacity_bps, worker_capacity_bps, n_workers)
        return _SeniorityLink(capacity_bps, worker_capacity_bps, n_workers, self.max_streams, self.seniority)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "seniority": self.seniority, "overtake": self.overtake,
                "overtake_time_s": None if math.isinf(self.overtake_time_s) else self.overtake_time_s,
                "fair_downloads": self.fair_downloads, "max_streams": self.max_streams,
                "join_window_s": self.join_window_s, "leader_weight": self.leader_weight}


SHARING_MODELS: dict[str, type[SharingModel]] = {
    "fair": FairSharing,
    "fair-per-transfer": TransferFairSharing,
    "fifo": FifoSharing,
    "seniority": SenioritySharing,
}


def sharing_model(
    name: str | SharingModel, max_streams: int | None = None, seniority: float | None = None,
    overtake: float | None = None, overtake_time_s: float | None = None,
    join_window_s: float | None = None, leader_weight: float | None = None,
) -> SharingModel:
    """The named model; ``join_window_s`` and ``leader_weight`` None: no released groups."""
    if isinstance(name, SharingModel):
        return name
    if join_window_s is not None and name != "seniority":
        raise ValueError(f"--join-window applies to --sharing seniority only, not '{name}'")
    if leader_weight is not None and name != "seniority":
        raise ValueError(f"--leader-weight applies to --sharing seniority only, not '{name}'")
    if seniority is not None and name != "seniority":
        raise ValueError(f"--seniority applies to --sharing seniority only, not '{name}'")
    if overtake is not None and name != "seniority":
        raise ValueError(f"--overtake applies to --sharing seniority only, not '{name}'")
    if overtake_time_s is not None and name != "seniority":
        raise ValueError(f"--overtake-time applies to --sharing seniority only, not '{name}'")
    if name in ("fair", "fair-per-transfer"):
        return SHARING_MODELS[name](max_streams)
    if name == "fifo":
        if max_streams is not None:
            raise ValueError("--max-streams applies to the fair and seniority models, not 'fifo', "
                             "which serves one transfer at a time")
        return FifoSharing()
    if name == "seniority":
        return SenioritySharing(DEFAULT_SENIORITY if seniority is None else seniority, max_streams,
                                DEFAULT_OVERTAKE if overtake is None else overtake,
                                overtake_time_s=DEFAULT_OVERTAKE_TIME_S if overtake_time_s is None else overtake_time_s,
                                join_window_s=join_window_s or 0.0,
                                leader_weight=1.0 if leader_weight is None else leader_weight)
    raise ValueError(f"unknown sharing model '{name}'; choose from {', '.join(SHARING_MODELS)}")


def _tolerance(value: float) -> float:
    # Finish tags and clocks are sums of many floats; treat as equal what differs by rounding.
    return 1e-9 * abs(value) + 1e-6


class _ConnectionFairLink:
    """Per-connection max-min fairness with equal worker interfaces: every active connection
    gets the same rate, so service is tracked in one global clock and per-connection clocks."""

    __slots__ = (
        "capacity",
        "worker_capacity",
        "max_streams",
        "rate",
        "active_workers",
        "n_admitted",
        "clock",
        "t_last",
        "flow_clock",
        "synced_at",
        "flows",
        "finish",
        "version",
        "waiting",
        "seq",
        "served",
        "admitted_at",
        "admit_at",
    )

    def __init__(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int, max_streams: int | None):
        self.capacity = capacity_bps
        self.worker_capacity = worker_capacity_bps
        self.max_streams = max_streams or 0  # 0: no cap
        self.admit_at = INF  # when capped, waiting transfers are admitted at the end of the instant they arrive
        self.rate = 0.0  # bits/s of every active connection
        self.active_workers = 0
        self.n_admitted = 0
        self.clock = 0.0  # G: bits served to each active connection since the link was last idle
        self.t_last = 0.0
        self.flow_clock = [0.0] * n_workers  # bits served to each transfer of the connection, as of synced_at
        self.synced_at = [0.0] * n_workers  # value of G when flow_clock was last brought up to date
        self.flows: list[list[tuple[float, int, int]]] = [[] for _ in range(n_workers)]  # (tag, seq, node)
        self.finish: list[tuple[float, int, int]] = []  # (G at the connection's next finish, version, worker)
        self.version = [0] * n_workers
        self.waiting: list[tuple[Any, int, int, int, float]] = []
        self.seq = 0
        self.served = 0.0
        self.admitted_at: dict[tuple[int, int], float] | None = None

    def _advance(self, now: float) -> None:
        if self.active_workers:
            dt = now - self.t_last
            self.clock += dt * self.rate
            self.served += dt * self.rate * self.active_workers
        self.t_last = now

    def _sync(self, worker: int) -> None:
        count = len(self.flows[worker])
        if count:
            self.flow_clock[worker] += (self.clock - self.synced_at[worker]) / count
        self.synced_at[worker] = self.clock

    def _rekey(self, worker: int) -> None:
        self.version[worker] += 1
        flows = self.flows[worker]
        if flows:
            at = self.clock + (flows[0][0] - self.flow_clock[worker]) * len(flows)
            heapq.heappush(self.finish, (at, self.version[worker], worker))

    def _set_rate(self) -> None:
        if self.active_workers:
            share = self.capacity / self.active_workers
            self.rate = share if share < self.worker_capacity else self.worker_capacity

    def set_capacity(self, now: float, capacity_bps: float) -> None:
        self._advance(now)
        self.capacity = capacity_bps
        self._set_rate()

    def connections(self) -> int:
        """Workers with data in flight on this direction (each worker has one connection)."""
        return self.active_workers

    def _admit(self, now: float, worker: int, node: int, bits: float, seq: int) -> None:
        flows = self.flows[worker]
        if not flows:
            self.flow_clock[worker] = 0.0
            self.synced_at[worker] = self.clock
            self.active_workers += 1
        else:
            self._sync(worker)
        heapq.heappush(flows, (self.flow_clock[worker] + bits, seq, node))
        self.n_admitted += 1
        self._rekey(worker)
        if self.admitted_at is not None:
            self.admitted_at[(worker, node)] = now

    def add(self, now: float, key: Any, worker: int, node: int, bits: float) -> float:
        if self.max_streams:
            self._advance(now)
            self.seq += 1
            heapq.heappush(self.waiting, (key, self.seq, worker, node, bits))
            if self.n_admitted < self.max_streams:
                self.admit_at = now
            return self.next_time()
        # The hot path (no stream cap), written out: advance the clocks, bring this connection's
        # per-transfer clock up to date, add the transfer, re-key the connection, re-rate.
        active = self.active_workers
        if active:
            step = (now - self.t_last) * self.rate
            self.clock += step
            self.served += step * active
        self.t_last = now
        clock = self.clock
        flows = self.flows[worker]
        count = len(flows)
        flow_clock = self.flow_clock
        if count:
            own = flow_clock[worker] + (clock - self.synced_at[worker]) / count
        else:
            own = 0.0
            active += 1
            self.active_workers = active
        flow_clock[worker] = own
        self.synced_at[worker] = clock
        self.seq += 1
        heapq.heappush(flows, (own + bits, self.seq, node))
        self.n_admitted += 1
        version = self.version
        v = version[worker] + 1
        version[worker] = v
        finish = self.finish
        heapq.heappush(finish, (clock + (flows[0][0] - own) * (count + 1), v, worker))
        if self.admitted_at is not None:
            self.admitted_at[(worker, node)] = now
        share = self.capacity / active
        rate = share if share < self.worker_capacity else self.worker_capacity
        self.rate = rate
        while finish[0][1] != version[finish[0][2]]:
            heapq.heappop(finish)
        return now + (finish[0][0] - clock) / rate

    def _top(self) -> tuple[float, int, int] | None:
        finish, version = self.finish, self.version
        while finish and finish[0][1] != version[finish[0][2]]:
            heapq.heappop(finish)
        return finish[0] if finish else None

    def next_time(self) -> float:
        top = self._top()
        if top is None:
            return self.admit_at
        at = self.t_last + (top[0] - self.clock) / self.rate
        return at if at < self.admit_at else self.admit_at

    def pop_finished(self, now: float) -> list[tuple[int, int]]:
        active = self.active_workers
        if active:
            step = (now - self.t_last) * self.rate
            self.clock += step
            self.served += step * active
        self.t_last = now
        clock = self.clock
        limit = clock + 1e-9 * clock + 1e-6
        late = now + 1e-9 * now + 1e-6
        finish, version, all_flows = self.finish, self.version, self.flows
        flow_clock, synced_at = self.flow_clock, self.synced_at
        pop = heapq.heappop
        done: list[tuple[int, int]] = []
        while finish:
            at, v, worker = finish[0]
            if v != version[worker]:
                pop(finish)
                continue
            # Finished if its clock says so; if nothing has finished yet, also when the clock
            # cannot resolve the few bits left (it was scheduled for now).
            if at > limit and (done or now + (at - clock) / self.rate > late):
                break
            pop(finish)
            flows = all_flows[worker]
            own = flow_clock[worker] + (clock - synced_at[worker]) / len(flows)
            synced_at[worker] = clock
            own_limit = own + 1e-9 * own + 1e-6
            done.append((worker, pop(flows)[2]))
            removed = 1
            while flows and flows[0][0] <= own_limit:
                done.append((worker, pop(flows)[2]))
                removed += 1
            self.n_admitted -= removed
            v += 1
            version[worker] = v
            if flows:
                flow_clock[worker] = own
                heapq.heappush(finish, (clock + (flows[0][0] - own) * len(flows), v, worker))
            else:
                active -= 1
        self.active_workers = active
        if not active:
            self.clock = 0.0
            finish.clear()
        if self.waiting:
            self.admit_at = INF
            while self.waiting and self.n_admitted < self.max_streams:
                _, seq, worker, node, bits = heapq.heappop(self.waiting)
                self._admit(now, worker, node, bits, seq)
        else:
            self.admit_at = INF
        if self.active_workers:
            share = self.capacity / self.active_workers
            self.rate = share if share < self.worker_capacity else self.worker_capacity
        return done

    def served_bits(self, now: float) -> float:
        self._advance(now)
        return self.served


class _SharedProcessorLink:
    """Processor sharing of one capacity among all active transfers, with one virtual clock."""

    __slots__ = (
        "capacity",
        "max_streams",
        "clock",
        "t_last",
        "active",
        "waiting",
        "seq",
        "served",
        "admitted_at",
        "admit_at",
        "in_flight",
    )

    def __init__(self, capacity_bps: float, max_streams: int | None) -> None:
        self.capacity = capacity_bps
        self.max_streams = max_streams or 0  # 0: no cap
        self.admit_at = INF
        self.clock = 0.0  # bits served to each active transfer since the link was last idle
        self.t_last = 0.0
        self.active: list[tuple[float, int, int, int]] = []  # (finish tag, seq, worker, node)
        self.waiting: list[tuple[Any, int, int, int, float]] = []
        self.seq = 0
        self.served = 0.0
        self.admitted_at: dict[tuple[int, int], float] | None = None
        # Active transfers per worker: the engine asks for connections() on every link event
        # while a direction is contended, and counting workers in ``active`` cost O(transfers).
        self.in_flight: dict[int, int] = {}

    def _advance(self, now: float) -> None:
        active = len(self.active)
        if active:
            dt = now - self.t_last
            self.clock += dt * self.capacity / active
            self.served += dt * self.capacity
        self.t_last = now

    def set_capacity(self, now: float, capacity_bps: float) -> None:
        self._advance(now)
        self.capacity = capacity_bps

    def connections(self) -> int:
        return len(self.in_flight)

    def _start(self, now: float, tag: float, seq: int, worker: int, node: int) -> None:
        heapq.heappush(self.active, (tag, seq, worker, node))
        self.in_flight[worker] = self.in_flight.get(worker, 0) + 1
        if self.admitted_at is not None:
            self.admitted_at[(worker, node)] = now

    def _finish(self) -> tuple[int, int]:
        _, _, worker, node = heapq.heappop(self.active)
        left = self.in_flight[worker] - 1
        if left:
            self.in_flight[worker] = left
        else:
            del self.in_flight[worker]
        return worker, node

    def add(self, now: float, key: Any, worker: int, node: int, bits: float) -> float:
        self._enqueue(now, key, worker, node, bits)
        return self.next_time()

    def _enqueue(self, now: float, key: Any, worker: int, node: int, bits: float) -> None:
        self._advance(now)
        self.seq += 1
        if not self.max_streams:
            self._start(now, self.clock + bits, self.seq, worker, node)
        else:
            heapq.heappush(self.waiting, (key, self.seq, worker, node, bits))
            if len(self.active) < self.max_streams:
                self.admit_at = now

    def next_time(self) -> float:
        active = self.active
        if not active:
            return self.admit_at
        at = self.t_last + (active[0][0] - self.clock) * len(active) / self.capacity
        return at if at < self.admit_at else self.admit_at

    def pop_finished(self, now: float) -> list[tuple[int, int]]:
        self._advance(now)
        active = self.active
        limit = self.clock + _tolerance(self.clock)
        done = []
        while active and active[0][0] <= limit:
            done.append(self._finish())
        if not done and active and self.t_last + (active[0][0] - self.clock) * len(active) / self.capacity <= now:
            # The clock cannot resolve what is left of this transfer: it is finished.
            done.append(self._finish())
        if not active:
            self.clock = 0.0
        waiting = self.waiting
        self.admit_at = INF
        while waiting and len(active) < self.max_streams:
            _, seq, worker, node, bits = heapq.heappop(waiting)
            self._start(now, self.clock + bits, seq, worker, node)
        return done

    def served_bits(self, now: float) -> float:
        self._advance(now)
        return self.served


class _MaxMinLink:
    """Max-min fair rates when workers' interfaces are slower than the PS's: one virtual clock
    per worker, rates recomputed by water-filling on every arrival and departure."""

    __slots__ = (
        "capacity",
        "worker_capacity",
        "max_streams",
        "clocks",
        "rates",
        "flows",
        "t_last",
        "n_active",
        "waiting",
        "seq",
        "served",
        "admitted_at",
        "admit_at",
        "n_connections",
        "caps",
    )

    def __init__(self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int, max_streams: int | None):
        self.capacity = capacity_bps
        # one cap for all workers, or (unequal interfaces) one per worker in ``caps``
        self.caps = worker_capacity_bps if isinstance(worker_capacity_bps, list) else None
        self.worker_capacity = min(self.caps) if self.caps else worker_capacity_bps
        self.max_streams = max_streams or 0  # 0: no cap
        self.admit_at = INF
        self.n_connections = 0  # workers with transfers in flight, kept so connections() is O(1)
        self.clocks = [0.0] * n_workers
        self.rates = [0.0] * n_workers  # bits/s of each transfer of that worker
        self.flows: list[list[tuple[float, int, int]]] = [[] for _ in range(n_workers)]  # (tag, seq, node)
        self.t_last = 0.0
        self.n_active = 0
        self.waiting: list[tuple[Any, int, int, int, float]] = []
        self.seq = 0
        self.served = 0.0
        self.admitted_at: dict[tuple[int, int], float] | None = None

    def _active_workers(self) -> Any:
        """Workers with transfers in flight (the seniority link keeps them in age order)."""
        return [w for w, flows in enumerate(self.flows) if flows]

    def _forget_idle(self) -> None:
        """Called after transfers finished; links that track active workers drop the idle ones."""

    def _advance(self, now: float) -> None:
        dt = now - self.t_last
        if dt > 0 and self.n_active:
            clocks, rates, flows = self.clocks, self.rates, self.flows
            total = 0.0
            for w in self._active_workers():
                clocks[w] += dt * rates[w]
                total += rates[w] * len(flows[w])
            self.served += dt * total
        self.t_last = now

    def _rerate(self) -> None:
        caps = self.caps
        if caps is None:
            groups = sorted(((len(f), w) for w, f in enumerate(self.flows) if f), reverse=True)
        else:  # the transfers of the worker with the smallest cap each are saturated first
            groups = sorted(((len(f), w) for w, f in enumerate(self.flows) if f), key=lambda g: caps[g[1]] / g[0])
        remaining = self.capacity
        flows_left = self.n_active
        rates = self.rates
        for count, w in groups:
            share = remaining / flows_left
            own = (self.worker_capacity if caps is None else caps[w]) / count
            rate = own if own < share else share
            rates[w] = rate
            remaining -= rate * count
            flows_left -= count

    def set_capacity(self, now: float, capacity_bps: float) -> None:
        self._advance(now)
        self.capacity = capacity_bps
        if self.n_active:
            self._rerate()

    def connections(self) -> int:
        return self.n_connections

    def _admit(self, now: float, worker: int, node: int, bits: float, seq: int) -> None:
        if not self.flows[worker]:
            self.n_connections += 1
        heapq.heappush(self.flows[worker], (self.clocks[worker] + bits, seq, node))
        self.n_active += 1
        if self.admitted_at is not None:
            self.admitted_at[(worker, node)] = now

    def add(self, now: float, key: Any, worker: int, node: int, bits: float) -> float:
        self._enqueue(now, key, worker, node, bits)
        return self.next_time()

    def _enqueue(self, now: float, key: Any, worker: int, node: int, bits: float) -> None:
        self._advance(now)
        self.seq += 1
        if not self.max_streams:
            self._admit(now, worker, node, bits, self.seq)
            self._rerate()
        else:
            heapq.heappush(self.waiting, (key, self.seq, worker, node, bits))
            if self.n_active < self.max_streams:
                self.admit_at = now

    def next_time(self) -> float:
        best = self.admit_at
        t_last, clocks, rates, flows = self.t_last, self.clocks, self.rates, self.flows
        for w in self._active_workers():
            rate = rates[w]
            if rate > 0.0:  # a connection without a share makes no progress: it finishes at infinity
                t = t_last + (flows[w][0][0] - clocks[w]) / rate
                if t < best:
                    best = t
        return best

    def pop_finished(self, now: float) -> list[tuple[int, int]]:
        self._advance(now)
        done = []
        clocks, rates, all_flows = self.clocks, self.rates, self.flows
        emptied = False
        for w in self._active_workers():
            flows = all_flows[w]
            limit = clocks[w] + _tolerance(clocks[w])
            while flows and flows[0][0] <= limit:
                done.append((w, heapq.heappop(flows)[2]))
                self.n_active -= 1
            if flows and rates[w] > 0.0 and self.t_last + (flows[0][0] - clocks[w]) / rates[w] <= now:
                # The clock cannot resolve what is left of this transfer: it is finished.
                done.append((w, heapq.heappop(flows)[2]))
                self.n_active -= 1
            if not flows:
                clocks[w] = 0.0
                self.n_connections -= 1
                emptied = True
        if emptied:
            self._forget_idle()
        self.admit_at = INF
        while self.waiting and (not self.max_streams or self.n_active < self.max_streams):
            _, seq, worker, node, bits = heapq.heappop(self.waiting)
            self._admit(now, worker, node, bits, seq)
        if self.n_active:
            self._rerate()
        return done

    def served_bits(self, now: float) -> float:
        self._advance(now)
        return self.served


class _FifoLink:
    """One transfer in service at a time; the rest wait in order-policy order."""

    __slots__ = ("rate", "worker_capacity", "current", "finish", "started", "waiting", "seq", "served", "admitted_at",
                 "capacity", "caps")

    def __init__(self, capacity_bps: float, worker_capacity_bps: Caps) -> None:
        self.caps = worker_capacity_bps if isinstance(worker_capacity_bps, list) else None
        self.worker_capacity = min(self.caps) if self.caps else worker_capacity_bps
        self.capacity = capacity_bps
        self.rate = min(capacity_bps, self.worker_capacity)
        self.current: tuple[int, int, float] | None = None
        self.finish = INF
        self.started = 0.0
        self.waiting: list[tuple[Any, int, int, int, float]] = []
        self.seq = 0
        self.served = 0.0
        self.admitted_at: dict[tuple[int, int], float] | None = None

    def _start(self, now: float, worker: int, node: int, bits: float) -> None:
        self.current = (worker, node, bits)
        if self.caps is not None:
            self.rate = min(self.capacity, self.caps[worker])
        self.started = now
        self.finish = now + bits / self.rate
        if self.admitted_at is not None:
            self.admitted_at[(worker, node)] = now

    def add(self, now: float, key: Any, worker: int, node: int, bits: float) -> float:
        self._enqueue(now, key, worker, node, bits)
        return self.next_time()

    def _enqueue(self, now: float, key: Any, worker: int, node: int, bits: float) -> None:
        # Everything queues; an idle link picks the smallest key at the end of this instant, so
        # transfers that become ready together are served in policy order.
        self.seq += 1
        heapq.heappush(self.waiting, (key, self.seq, worker, node, bits))
        if self.current is None:
            self.finish = now

    def next_time(self) -> float:
        return self.finish

    def connections(self) -> int:
        return 0 if self.current is None else 1

    def set_capacity(self, now: float, capacity_bps: float) -> None:
        self.capacity = capacity_bps
        cap = self.worker_capacity if self.caps is None or self.current is None else self.caps[self.current[0]]
        rate = min(capacity_bps, cap)
        if self.current is not None:
            # bank what the transfer in service has got so far; the rest goes at the new rate
            done = (now - self.started) * self.rate
            worker, node, bits = self.current
            self.served += done
            self.current = (worker, node, bits - done)
            self.started = now
            self.finish = now + (bits - done) / rate
        self.rate = rate

    def pop_finished(self, now: float) -> list[tuple[int, int]]:
        current = self.current
        done = []
        if current is not None:
            if now < self.finish - _tolerance(self.finish):
                return done
            worker, node, bits = current
            self.served += bits
            self.current = None
            done.append((worker, node))
        self.finish = INF
        if self.waiting:
            _, _, w, n, b = heapq.heappop(self.waiting)
            self._start(now, w, n, b)
        return done

    def served_bits(self, now: float) -> float:
        if self.current is None:
            return self.served
        return self.served + (now - self.started) * self.rate


class _SeniorityLink(_MaxMinLink):
    """Weighted shares by connection age: the per-worker clocks of the max-min link, with
    rates from weighted water-filling instead of equal shares. Active connections are kept in
    age order, so every call touches only them.

    The water-filling never divides by a weight: the connection at rank ``r`` of ``m`` gets
    ``remaining / g(m - r)`` of what the older ones left, where ``g(k) = s^0 + ... + s^-(k-1)``
    is the weight of the ``k`` connections from it on relative to its own. The weights
    ``s^-rank`` themselves underflow to 0 past rank 1074 (``s = 2``; 323 for ``s = 10``), which
    gave connections a rate of 0 (a division by zero in ``next_time``); a running total of them,
    less each weight in turn, keeps only rounding noise after a few dozen ranks (``s = 1.5``: it
    falls below the next weight at rank 87). ``g`` is a prefix sum of positive terms, at least
    1, so every share is ``remaining`` or a part of it and ``remaining`` never goes negative.
    For ``s = 2`` and up to 53 connections the result is the same, to the bit, as weight over
    running total.

    What is left halves from rank to rank (``s = 2``), so past rank 53 it is below the
    resolution of the capacity itself (``capacity + remaining == capacity``): such connections
    get no share at all, make no progress and finish at infinity until older ones leave. Only
    the ``moving`` oldest connections are advanced, timed and re-rated, so each call costs
    O(moving), about 53 at the default weight, not O(active): 4096 workers stay affordable."""

    __slots__ = ("by_age", "group_weight", "moving", "overtake", "rng", "seniority")

    def __init__(
        self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int, max_streams: int | None,
        seniority: float, overtake: float = 0.0, rng: random.Random | None = None,
    ) -> None:
        super().__init__(capacity_bps, worker_capacity_bps, n_workers, max_streams)
        self.by_age: list[int] = []  # active connections, by rank: the heaviest first
        self.moving = 0  # how many of them, from the oldest, have a share; the others' rates are not read
        self.group_weight = _group_weights(seniority, n_workers)
        self.seniority = seniority
        self.overtake = overtake
        self.rng = rng

    def _active_workers(self) -> list[int]:
        """The connections with a share: only they move their clocks, finish and carry bits."""
        return self.by_age[: self.moving]

    def connections(self) -> int:
        return len(self.by_age)

    def _forget_idle(self) -> None:
        # Only connections with a share can have emptied; the rest keep their order untouched.
        flows, moving = self.flows, self.moving
        self.by_age = [w for w in self.by_age[:moving] if flows[w]] + self.by_age[moving:]

    def _admit(self, now: float, worker: int, node: int, bits: float, seq: int) -> None:
        if not self.flows[worker]:
            by_age = self.by_age
            if by_age and self.overtake > 0.0 and self.rng.random() < self.overtake:
                by_age.insert(self.rng.randrange(len(by_age)), worker)  # wins the race for the queue
            else:
                by_age.append(worker)
        super()._admit(now, worker, node, bits, seq)

    def _rerate(self) -> None:
        if self.caps is not None:
            self._rerate_unequal_caps()
            return
        remaining = capacity = self.capacity
        group_weight, flows, rates, cap = self.group_weight, self.flows, self.rates, self.worker_capacity
        left = len(self.by_age)  # connections from this rank on
        moving = 0
        # Equal caps: the heaviest connections hit their cap first, so one pass in age order
        # is the weighted water-filling.
        for w in self.by_age:
            if capacity + remaining == capacity:
                break  # what is left is below the capacity's resolution: no share for the rest
            share = remaining / group_weight[left]
            rate = share if share < cap else cap
            rates[w] = rate / len(flows[w])
            remaining -= rate
            left -= 1
            moving += 1
        self.moving = moving

    def _rerate_unequal_caps(self) -> None:
        """Weighted water-filling with a cap per worker: connections are saturated in order of cap
        over weight; the rest share what is left by weight. Weights that underflow (rank past
        about a thousand) give no share, as in the equal-cap path."""
        self._fill_by_weight({w: self.seniority ** -rank for rank, w in enumerate(self.by_age)}, self.caps)

    def _fill_by_weight(self, weights: dict[int, float], caps: list[float]) -> None:
        """Weighted water-filling of the active connections (``weights``' keys) under per-worker caps."""
        flows, rates = self.flows, self.rates
        by_age = list(weights)
        total = sum(weights.values())
        remaining = self.capacity
        order = sorted(by_age, key=lambda w: caps[w] / weights[w] if weights[w] > 0.0 else INF)
        for k, w in enumerate(order):
            share = remaining * weights[w] / total if total > 0.0 else 0.0
            if caps[w] < share:
                rates[w] = caps[w] / len(flows[w])
                remaining -= caps[w]
                total -= weights[w]
                continue
            for v in order[k:]:
                rates[v] = (remaining * weights[v] / total if total > 0.0 else 0.0) / len(flows[v])
            break
        self.moving = len(by_age)


class _JoinGroupLink(_SeniorityLink):
    """Seniority between groups of connections that joined together, near-fair sharing inside one.

    A connection that joins within ``join_window_s`` of the first connection of the newest group
    belongs to that group; otherwise it opens a new one and leads it. A connection weighs
    ``seniority^-k``, where ``k`` is how many groups with active connections joined before its
    own, times ``leader_weight`` if it leads its group; a leader that leaves is not replaced.
    Groups are fixed when connections join, so a weight changes only when an older group empties.
    Joining never overtakes: the race for the queue that overtaking stands for is what the
    leader's weight measures among co-joiners, and later groups are seniority's case."""

    __slots__ = ("all_caps", "group_of", "group_opened_at", "is_leader", "join_window_s", "leader_weight",
                 "newest_group")

    def __init__(
        self, capacity_bps: float, worker_capacity_bps: Caps, n_workers: int, max_streams: int | None,
        seniority: float, join_window_s: float, leader_weight: float,
    ) -> None:
        super().__init__(capacity_bps, worker_capacity_bps, n_workers, max_streams, seniority)
        self.join_window_s = join_window_s
        self.leader_weight = leader_weight
        self.group_of = [0] * n_workers
        self.is_leader = [False] * n_workers
        self.newest_group = -1
        self.group_opened_at = -INF
        self.all_caps = self.caps if self.caps is not None else [self.worker_capacity] * n_workers

    def _admit(self, now: float, worker: int, node: int, bits: float, seq: int) -> None:
        if not self.flows[worker]:
            opens = now - self.group_opened_at > self.join_window_s
            if opens:
                self.newest_group += 1
                self.group_opened_at = now
            self.group_of[worker] = self.newest_group
            self.is_leader[worker] = opens
            self.by_age.append(worker)
        _MaxMinLink._admit(self, now, worker, node, bits, seq)

    def _rerate(self) -> None:
        by_age, group_of, is_leader = self.by_age, self.group_of, self.is_leader
        weights: dict[int, float] = {}
        rank, group = -1, -1
        for w in by_age:  # in joining order, so groups come in order too
            if group_of[w] != group:
                group = group_of[w]
                rank += 1
            weight = self.seniority ** -rank
            weights[w] = weight * self.leader_weight if is_leader[w] else weight
        self._fill_by_weight(weights, self.all_caps)


def _group_weights(seniority: float, n_workers: int) -> list[float]:
    """``g[k] = s^0 + s^-1 + ... + s^-(k-1)`` for ``k`` from 0 to ``n_workers``: the weight of
    ``k`` consecutive connections relative to the oldest of them. Summed from the heaviest term
    in the order ``sum(weights[:k])`` adds them, so small counts keep their former values."""
    total = 0.0
    group_weight = [total]
    for rank in range(n_workers):
        total += seniority**-rank
        group_weight.append(total)
    return group_weight
