"""Fit the replay's link efficiencies to a link probe by replaying the probe's own workload.

Why: the link probe (``link_probe``) runs the model's step shape over real TCP without
TensorFlow, and its least-squares fit says how many bits each direction delivered alone,
contended and under the other direction's load. Those shares are not yet what the replay
needs: a deep buffer hurts two workers in turns (every transfer starts alone after idle,
against the other direction's queue) far more than it hurts the steady bits the fit sees, and
three or four workers keep both directions busy with several connections that fill the line
between them. So the probe's workload, a chain step of its bytes and compute, is replayed at
the probed worker counts, and the two kinds of loss are set so that the replay's rates meet
the probe's:

- first, where the probe ran one worker, the chain's compute is set so that its one-worker
  replay meets that rate: the contended rates can only speak of the link once the replay of the
  probe alone is the probe. A twin whose stages cost TensorFlow more than they sleep (resnet's 22
  stages stepped 22 ms slower than the model's untraced step on an unshaped link) would
  otherwise pass its own slowness off as the link's loss;
- the reverse efficiencies (a lone transfer's share under the other direction's load) scale
  together from the fit's per-direction losses (alike when it saw none), by the factor that
  gives the probe's two-worker rate (zero where the replay is not faster than the probe);
- behind a queue deeper than the replay's latency holds (``rates_set_contention``), the
  contention efficiency is the one that gives the probe's three- and more-worker rates; behind a
  shallow one it stays the least-squares one (see ``calibrate_link_to_probe``);
- per count (TensorFlow's probe), where even loss-free contention leaves a count's replay short
  of the probe, that count's reverse loss shrinks until it meets it: the reverse loss is fitted at
  two workers, whose runs may keep bunching where three pipeline (inception at 50mbit behind
  CUBIC's 100 ms buffer: a reverse efficiency of 73% at two workers held the replay of three to
  7.4-7.7 steps/s against the probe's 8.5, and the prediction 12% under the model's runs).

Both rates fall monotonically with the loss, so each is a bisection; they are alternated twice
(each moves the other's rate a little). Nothing of TensorFlow's multi-worker runs enters: the
probe and the single-worker profile are all it uses.

Where the model's step graph is at hand (validate), the fit replays that graph instead of the
chain (``ReplayedWorkload``): the TensorFlow probe is the model's twin, carrying its tensors in
its compute schedule, so its rates are the model graph's to meet, and efficiencies fitted on the
chain carried the chain's simpler schedule into the model's prediction (the model's graph
replayed up to 8.5% faster than the chain on the same fitted link, +1.1% on average over the
contended rows of the environment campaign). The lone-run compute fit is then not needed: the
graph's compute is the model's, calibrated from its profile. ``tracetool probe``'s link profile,
made without a model, keeps the chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from replay.engine.link import LinkConfig, target_link
from replay.link_profile import QUEUE_WAIT_CAP_S
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph
from tracetool.measure.repeats import rates_by_workers
from tracetool.measure.transports import TENSORFLOW_TRANSPORT

BISECTION_STEPS = 8
LONE_BISECTION_STEPS = 14  # the lone step's compute to within 0.01% of its step
ROUNDS = 2
REPLAY_SEEDS = 3
MIN_EFFICIENCY = 0.1
EQUAL_SPLIT = 0.9
# A count whose replay with loss-free contention stays this far below the probe gets its own reverse
# loss: within it, the contention bisection's own resolution and the seeds' noise.
REVERSE_REFIT_SHORTFALL = 0.01


@dataclass(frozen=True)
class CalibratedLink:
    """The link efficiencies that make the replay of the probe's workload meet the probe."""

    contention_efficiency: float
    download_reverse_efficiency: float
    upload_reverse_efficiency: float
    reverse_scale: float  # the fit's per-direction reverse losses times this
    # "probe rates" (replayed to meet them), "least squares" (the probe's bits) or "not probed" (1: a
    # probe of rates alone, without three or more workers)
    contention_source: str
    probe_steps_per_second: dict[int, float]
    replayed_steps_per_second: dict[int, float]
    # with ``per_count``: each probed count of three or more workers its own contention efficiency
    contention_by_workers: dict[int, float] = field(default_factory=dict)
    # with ``per_count``: the counts whose replay needed a smaller reverse loss than two workers' to
    # meet the probe even with loss-free contention, and their (download, upload) reverse efficiencies
    reverse_by_workers: dict[int, tuple[float, float]] = field(default_factory=dict)
    # the chain's compute per step: the probe's uncovered compute, or what meets its one-worker rate
    replayed_compute_s: float = 0.0
    # what was replayed to meet the probe: its "chain" step, or the "model"'s step graph (ReplayedWorkload)
    replayed_workload: str = "chain"

    def link_contention(self) -> tuple[tuple[int, float], ...]:
        """``LinkConfig.contention_by_workers`` of this fit."""
        return tuple(sorted(self.contention_by_workers.items()))

    def link_reverse(self) -> tuple[tuple[int, float, float], ...]:
        """``LinkConfig.reverse_by_workers`` of this fit."""
        return tuple((n, down, up) for n, (down, up) in sorted(self.reverse_by_workers.items()))

    def to_json_dict(self) -> dict[str, Any]:
        """As JSON, whose object keys are strings: the worker counts become "1", "2", ..."""
        document = asdict(self)
        for rates in ("probe_steps_per_second", "replayed_steps_per_second", "contention_by_workers",
                      "reverse_by_workers"):
            document[rates] = {str(k): v for k, v in document[rates].items()}
        document["reverse_by_workers"] = {k: list(v) for k, v in document["reverse_by_workers"].items()}
        return document


def _scaled(loss_free: float, scale: float) -> float:
    return max(MIN_EFFICIENCY, min(1.0, 1.0 - scale * (1.0 - loss_free)))


def _bisect(rate_at: Callable[[float], float], low: float, high: float, target: float, falling: bool,
            steps: int = BISECTION_STEPS) -> float:
    """The x in [low, high] where ``rate_at`` meets ``target``; ``falling``: the rate falls as x grows."""
    for _ in range(steps):
        middle = (low + high) / 2.0
        if (rate_at(middle) > target) == falling:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def probe_rates(probe: dict[str, Any]) -> dict[int, float]:
    """Steps/s per worker count of a link-probe.json; a count probed more than once (``--probe-repeats``)
    gets the mean of its runs, since each run may settle into another regime."""
    return {workers: sum(rates) / len(rates) for workers, rates in rates_by_workers(probe["points"]).items()}


def rates_set_contention(queue_s: float | None) -> bool:
    """Whether the probe's three- and four-worker rates, rather than its least-squares bits,
    should set the contention efficiency: yes when the shaped queue holds more than the replay's
    latency takes of it (``replay.link_profile.QUEUE_WAIT_CAP_S``); no when it is shallower or
    unknown (a real cluster's link, whose probe says nothing of its queue).

    Why: the replay gives every transfer a fixed latency, at most the cap. Several connections
    keep a deep queue fuller than one does, so their round trips lengthen as connections join,
    a loss the bits delivered per busy second do not show; only the rates do. Behind 100 ms with
    BBR the replay of the probe's workload with the least-squares efficiency ran 12% (three
    workers) and 18% (four, medians) faster than the probe, whose own rates were within 2% of
    TensorFlow's (medians); fitting the efficiency to them brought the table's BBR points from
    5.8% / 33.9% to 3.3% / 16.1% (median / max) and CUBIC's from 6.8% / 26.7% to 4.4% / 25.4%.
    Behind the 5 ms queue the replay's latency holds the whole queue, and raw TCP's three and
    four workers run 4-6% (medians; mlp's up to 22%) slower than TensorFlow's, which the
    least-squares efficiency does not follow: fitting it to those rates there would have cost
    mlp 11-17% (docs/network-probe.md)."""
    return queue_s is not None and queue_s > QUEUE_WAIT_CAP_S


@dataclass(frozen=True)
class ReplayedWorkload:
    """What the fit replays instead of the probe's chain: the model's own step graph on the link
    and with the settings its prediction will have (the efficiencies are set on the graph they
    will predict with, so that the chain's simpler schedule does not enter them)."""

    graph: Any
    link: LinkConfig
    settings: ReplaySettings


def calibrate_link_to_probe(probe: dict[str, Any], latency_s: float, replay_contention: bool = False,
                            per_count: bool = False, request_queue_s: float = 0.0,
                            burst_bytes: float = 0.0, workload: ReplayedWorkload | None = None) -> CalibratedLink:
    """Replay ``probe``'s workload (a link-probe.json of validate) at its worker counts and fit
    the reverse efficiencies as the module says, and with ``replay_contention`` the contention
    efficiency too; without it the probe's least-squares contention efficiency stays. A probe
    without two workers keeps its fitted reverse losses; one without three or more its fitted
    contention. ``request_queue_s`` replays the probe's requests waiting behind the other
    workers' gradients as the model's will (``LinkConfig.request_queue_s``): fitted without it, a
    probe slowed that way passes for a reverse loss, and the prediction pays the wait twice
    (inception at 50mbit behind 100 ms: a reverse efficiency of 73% without, 99.8% with).
    ``burst_bytes`` is the shaper's bucket the probe ran behind, as the model's runs did.

    validate sets ``replay_contention`` by ``rates_set_contention``: behind the 5 ms buffer with
    CUBIC, raw TCP's three and four workers of mlp's shape run 10 to 22% slower than TensorFlow's,
    and a contention efficiency that matches them predicts TensorFlow 11 to 17% low."""
    measured = probe_rates(probe)
    settings = ReplaySettings(seeds=REPLAY_SEEDS, calibrate=False)
    compute_s = float(probe["compute_s"])
    if workload is not None:
        graph, base, settings = workload.graph, workload.link, replace(workload.settings, seeds=REPLAY_SEEDS)
    else:
        if 1 in measured:
            compute_s = lone_compute_s(probe, latency_s, measured[1], settings, request_queue_s, burst_bytes)
        graph = _probe_chain(probe, compute_s)
        base = target_link(graph, float(probe["bandwidth_bps"]), latency_s, request_queue_s=request_queue_s,
                           burst_bytes=burst_bytes)
    fitted_down = float(probe.get("download_reverse_efficiency", 1.0))
    fitted_up = float(probe.get("upload_reverse_efficiency", 1.0))
    if min(fitted_down, fitted_up) >= 1.0 and 2 in measured:
        # the fit saw no reverse loss: both directions alike, and the two-worker rate says how much
        fitted_down = fitted_up = EQUAL_SPLIT

    def link_with(contention: float, scale: float) -> LinkConfig:
        return replace(base, contention_efficiency=contention,
                       download_reverse_efficiency=_scaled(fitted_down, scale),
                       upload_reverse_efficiency=_scaled(fitted_up, scale))

    def rates(link: LinkConfig, workers: list[int]) -> dict[int, float]:
        return {p.workers: p.steps_per_second for p in predict(graph, workers, link, settings).points}

    contention = float(probe.get("contention_efficiency", 1.0))
    scale = 1.0
    largest_loss = 1.0 - min(fitted_down, fitted_up)  # above 0 wherever there is a two-worker rate
    many = [n for n in measured if n >= 3] if replay_contention else []
    for _ in range(ROUNDS):
        if 2 in measured:
            scale = _bisect(lambda s, e=contention: rates(link_with(e, s), [2])[2], 0.0,
                            (1.0 - MIN_EFFICIENCY) / largest_loss, measured[2], falling=True)
        if many:
            contention = _bisect(lambda e, s=scale: sum(rates(link_with(e, s), many).values()), MIN_EFFICIENCY, 1.0,
                                 sum(measured[n] for n in many), falling=False)
    final = link_with(contention, scale)
    by_workers: dict[int, float] = {}
    reverse_by_workers: dict[int, tuple[float, float]] = {}
    if per_count and many:
        # one efficiency cannot meet three workers that pipeline and four that collapse, or the reverse
        for n in many:
            # (only where there is a reverse loss to relax: a replay short of the probe without any
            # is as close as the link's line rate lets it come)
            lossy = min(final.download_reverse_efficiency, final.upload_reverse_efficiency) < 1.0
            if lossy and rates(link_with(1.0, scale), [n])[n] < measured[n] * (1.0 - REVERSE_REFIT_SHORTFALL):
                count_scale = _bisect(lambda s, n=n: rates(link_with(1.0, s), [n])[n], 0.0, scale, measured[n],
                                      falling=True)
                relaxed = link_with(1.0, count_scale)
                by_workers[n] = 1.0
                reverse_by_workers[n] = (relaxed.download_reverse_efficiency, relaxed.upload_reverse_efficiency)
            elif len(many) > 1:
                by_workers[n] = _bisect(lambda e, n=n: rates(link_with(e, scale), [n])[n], MIN_EFFICIENCY, 1.0,
                                        measured[n], falling=False)
        if reverse_by_workers:
            # a replay takes the largest count up to its own: the counts fitted with two workers' reverse
            # loss keep it, rather than a smaller count's relaxed one
            for n in many:
                reverse_by_workers.setdefault(n, (final.download_reverse_efficiency, final.upload_reverse_efficiency))
        final = replace(final, contention_by_workers=tuple(sorted(by_workers.items())),
                        reverse_by_workers=tuple((n, d, u) for n, (d, u) in sorted(reverse_by_workers.items())))
    # a probe of rates alone (TensorFlow's) without three workers leaves the contention unmeasured
    source = "probe rates" if many else ("not probed" if probe.get("transport") == TENSORFLOW_TRANSPORT
                                         else "least squares")
    return CalibratedLink(contention, final.download_reverse_efficiency, final.upload_reverse_efficiency, scale,
                          source, measured, rates(final, sorted(measured)), by_workers, reverse_by_workers, compute_s,
                          "chain" if workload is None else "model")


def _probe_chain(probe: dict[str, Any], compute_s: float) -> Any:
    return chain_graph(compute_us=compute_s * 1e6, download_bytes=int(probe["download_bytes"]),
                       upload_bytes=int(probe["upload_bytes"]))


def lone_compute_s(probe: dict[str, Any], latency_s: float, lone_rate: float, settings: ReplaySettings,
                   request_queue_s: float = 0.0, burst_bytes: float = 0.0) -> float:
    """The chain's compute per step that makes one replayed worker step at ``lone_rate``, the
    probe's own one-worker rate: at least none (a probe faster than its transfers allow keeps
    none), at most the probe's whole step."""

    def rate_at(compute_s: float) -> float:
        graph = _probe_chain(probe, compute_s)
        link = target_link(graph, float(probe["bandwidth_bps"]), latency_s, request_queue_s=request_queue_s,
                           burst_bytes=burst_bytes)
        return predict(graph, [1], link, replace(settings, seeds=1)).points[0].steps_per_second

    return _bisect(rate_at, 0.0, 1.0 / lone_rate, lone_rate, falling=True, steps=LONE_BISECTION_STEPS)
