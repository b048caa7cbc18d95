"""A measured network, as the replay uses it: the link profile that ``tracetool probe`` writes.

The replay's link has a line rate each way, a one-way latency, and a sharing model whose
parameters say how TCP connections divide a busy direction: ``contention_efficiency`` (the share
of the rate two connections deliver together), ``seniority`` (how much more the connection
already sending gets than one that joins), and the chance that a joiner overtakes the
incumbents (``overtake``, at most, and ``overtake_time_s / T`` for transfers of T seconds).
Which values hold is a property of the network (its queue, its congestion control), so they are
measured on it rather than fitted to one environment (docs/network-probe.md).

A profile also holds ``step_fits``: the contention and reverse efficiencies that make the
replay of a reference step (``tracetool.measure.link_step_fit``) meet that step probed over the
link by one to four workers; one reference step by default, several with ``tracetool probe
--reference-steps``. Where they are present the replay takes its link efficiencies from them,
interpolated by the logarithm of the model's own transfer time between several
(``LinkProfile.efficiencies``), and keeps the default seniority and overtake law: fitted per
model by validate, those efficiencies are a property of the network rather than of the model
(each point predicted with the median of the other models' fits lost nothing behind BBR and the
5 ms queue, docs/network-probe.md), while the join trials' seniority and overtakes predicted
deep buffers 20-50% fast.

``latency_s`` is what a transfer's last byte waits beyond the fluid model: half the idle round
trip plus the queue a busy direction keeps standing (loss-based TCP fills a drop-tail queue;
BBR keeps it short). The probe measures the standing queue as the round-trip time under load
minus the idle one.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from replay.engine.link import efficiency_for_workers, reverse_for_workers
from tracetool.errors import ToolError
from tracetool.graph.json_fields import MAX_BANDWIDTH_BPS, Place, number_field, object_field, string_field

SCHEMA_NAME = "tfsim.link-profile"
SCHEMA_VERSION = 1
_FIX = "measure the network again with 'tracetool probe'"


@dataclass(frozen=True)
class DirectionProfile:
    """One direction of the PS link as measured."""

    payload_bps: float  # bulk goodput of one connection
    line_rate_bps: float  # the goodput with TCP/IP and Ethernet headers added back (MTU 1500)
    queue_delay_s: float  # round trip under a bulk transfer minus the idle round trip
    contention_efficiency: float  # two connections' rate together, as a share of one's
    seniority: float  # incumbent's rate over the joiner's while both send (joiner not ahead)
    overtake_short: float  # share of join trials the joiner won, short transfers
    overtake_long: float  # the same, long transfers
    short_transfer_s: float
    long_transfer_s: float
    # join trials read, both lengths; 0: none ran (the default where step fits give the sharing),
    # and contention efficiency, seniority and overtakes hold the neutral 1, 1 and 0, which no replay reads
    trials: int


# The most a transfer's last byte waits behind a loaded direction's queue, in the replay's latency.
# One worker's steps on a shaped link show a delay per transfer of about the queue's time when the
# queue is shallow (5 ms: the validation table's one-worker points within 3.5%), but not when it is
# deep: with a 100 ms buffer, where the probe measured a standing queue of 78 ms upstream under
# CUBIC, the one-worker steps of alexnet, vgg, resnet and inception at 25mbit fit 0.2 to 6 ms
# (CUBIC) and 0.2 to 4 ms (BBR) (benchmarks/latency_fit.py; docs/network-probe.md). A lone
# connection's own bytes fill the queue it waits behind, so the line stays busy and its last
# byte leaves when the fluid model says; what remains is a delay of a few ms that does not grow
# with the buffer. Taking the whole standing queue predicted one worker 11 to 29% slow there.
QUEUE_WAIT_CAP_S = 0.005


def queue_wait_s(standing_queue_s: float) -> float:
    """The part of a direction's standing queue that the replay adds to every transfer's latency."""
    return min(max(0.0, standing_queue_s), QUEUE_WAIT_CAP_S)


# A standing upload queue up to this deep gives the replay no request queue
# (``LinkConfig.request_queue_s``). Behind the 5 ms buffer at 50mbit (8.3 ms standing, 3.3 ms
# beyond the latency) the wait tipped inception's and resnet's two workers into the slow regime
# (-13.0% and -6.2%) where they run fast; at 25mbit (17.5 ms standing) it brought them from +4.0%
# and +2.5% to -1.7% and -1.6% (docs/network-probe.md, "Requests wait behind the other workers'
# gradients"). Chosen after seeing those points, so they no longer test it.
REQUEST_QUEUE_MIN_STANDING_S = 2 * QUEUE_WAIT_CAP_S


def request_queue_s(standing_upload_queue_s: float) -> float:
    """``LinkConfig.request_queue_s`` of a link whose upload direction keeps this standing queue:
    what the latency does not hold, where it stands deeper than ``REQUEST_QUEUE_MIN_STANDING_S``."""
    if standing_upload_queue_s <= REQUEST_QUEUE_MIN_STANDING_S:
        return 0.0
    return standing_upload_queue_s - queue_wait_s(standing_upload_queue_s)


@dataclass(frozen=True)
class StepFit:
    """The link efficiencies fitted by replaying a reference step probed over the link."""

    contention_efficiency: float
    download_reverse_efficiency: float
    upload_reverse_efficiency: float
    contention_source: str  # "probe rates" (a queue deeper than the replay's latency) or "least squares"
    download_bytes: int  # the reference step: bytes each way and compute between them
    upload_bytes: int
    compute_s: float
    transfer_s: float  # each direction's transfer alone at the payload rate
    # every probe run's (workers, steps per second): how far runs of one worker count spread
    runs: tuple[tuple[int, float], ...] = ()
    # (workers, contention efficiency) for three or more workers, fewest first, where the probe
    # fitted one per count (TensorFlow's reference step, whose three workers may lose less than its four)
    contention_by_workers: tuple[tuple[int, float], ...] = ()
    # (workers, download, upload) reverse efficiencies of three or more workers, fewest first, where
    # the replay with loss-free contention stayed short of the probe with two workers' reverse loss
    # (three workers that pipeline where two bunch); every count of three or more once any is
    reverse_by_workers: tuple[tuple[int, float, float], ...] = ()

    def contention_for(self, workers: int) -> float:
        """The contention efficiency of ``workers``: the largest fitted count up to it, else the one."""
        return efficiency_for_workers(self.contention_efficiency, self.contention_by_workers, workers)

    def reverse_for(self, workers: int) -> tuple[float, float]:
        """The (download, upload) reverse efficiencies of ``workers``, picked as the contention's."""
        return reverse_for_workers((self.download_reverse_efficiency, self.upload_reverse_efficiency),
                                   self.reverse_by_workers, workers)


@dataclass(frozen=True)
class LinkProfile:
    download: DirectionProfile
    upload: DirectionProfile
    rtt_idle_s: float
    environment: dict[str, Any]  # what was measured: emulated (bandwidth, queue, congestion control) or hosts
    step_fits: tuple[StepFit, ...] = ()  # shortest transfers first; none for real hosts and older profiles

    @property
    def line_rate_bps(self) -> float:
        return (self.download.line_rate_bps + self.upload.line_rate_bps) / 2

    @property
    def latency_s(self) -> float:
        queue = (self.download.queue_delay_s + self.upload.queue_delay_s) / 2
        return self.rtt_idle_s / 2 + queue_wait_s(queue)

    @property
    def request_queue_s(self) -> float:
        """``LinkConfig.request_queue_s``: the upload direction's standing queue beyond the part
        the latency holds. Only the upload direction's: a worker's parameter requests travel
        there, behind other workers' gradients (behind CUBIC's 100 ms buffer the probe measured
        75-92 ms standing upstream and 2-6 ms downstream)."""
        return request_queue_s(self.upload.queue_delay_s)

    def efficiencies(self, download_s: float, upload_s: float) -> tuple[float, float, float]:
        """(contention, download reverse, upload reverse) efficiencies for a step whose transfers
        take ``download_s`` and ``upload_s`` alone: each reverse efficiency from the step fits at
        its direction's transfer time, the contention efficiency at their mean; between two fits
        linear in the logarithm of the time, beyond the outer ones theirs. Without step fits the
        join trials' contention efficiency and no reverse loss."""
        if not self.step_fits:
            contention = (self.download.contention_efficiency + self.upload.contention_efficiency) / 2
            return min(1.0, max(0.1, contention)), 1.0, 1.0
        return (_interpolated(self.step_fits, (download_s + upload_s) / 2, "contention_efficiency"),
                _interpolated(self.step_fits, download_s, "download_reverse_efficiency"),
                _interpolated(self.step_fits, upload_s, "upload_reverse_efficiency"))

    def contention_by_workers(self, download_s: float, upload_s: float) -> tuple[tuple[int, float], ...]:
        """``LinkConfig.contention_by_workers`` for a step whose transfers take ``download_s`` and
        ``upload_s`` alone: each count the step fits fitted, interpolated as ``efficiencies``
        interpolates the one contention efficiency; none where no fit has counts of its own."""
        counts = sorted({workers for fit in self.step_fits for workers, _ in fit.contention_by_workers})
        mean_s = (download_s + upload_s) / 2
        return tuple((n, _interpolated_by(self.step_fits, mean_s, lambda fit, n=n: fit.contention_for(n)))
                     for n in counts)

    def reverse_by_workers(self, download_s: float, upload_s: float) -> tuple[tuple[int, float, float], ...]:
        """``LinkConfig.reverse_by_workers`` for a step whose transfers take ``download_s`` and
        ``upload_s`` alone: each count any step fit relaxed, each direction interpolated at its
        own transfer time as ``efficiencies`` does (a fit without that count gives its one
        reverse loss); none where no fit relaxed a count."""
        counts = sorted({entry[0] for fit in self.step_fits for entry in fit.reverse_by_workers})
        return tuple((n, _interpolated_by(self.step_fits, download_s, lambda fit, n=n: fit.reverse_for(n)[0]),
                      _interpolated_by(self.step_fits, upload_s, lambda fit, n=n: fit.reverse_for(n)[1]))
                     for n in counts)

    @property
    def seniority(self) -> float:
        return min(10.0, max(1.0, (self.download.seniority + self.upload.seniority) / 2))

    def overtake(self) -> tuple[float, float]:
        """``(overtake, overtake_time_s)`` of the replay's law ``min(overtake, overtake_time_s / T)``:
        the chance measured on short transfers caps it; where long transfers are overtaken less,
        ``overtake_time_s`` makes the law pass through the long transfers' chance."""
        short = (self.download.overtake_short + self.upload.overtake_short) / 2
        long = (self.download.overtake_long + self.upload.overtake_long) / 2
        long_s = (self.download.long_transfer_s + self.upload.long_transfer_s) / 2
        cap = max(short, long)
        if cap <= 0.0:
            return 0.0, math.inf
        if long >= short:
            return cap, math.inf
        return cap, max(long, 0.01) * long_s

    def sharing_parameters(self) -> dict[str, float]:
        """The sharing law the replay takes from this profile: none with step fits (their
        efficiencies depend on the model's transfer time, ``efficiencies``; the seniority and
        overtake law stay the defaults), else the join trials' law and contention efficiency."""
        if self.step_fits:
            return {}
        overtake, overtake_time_s = self.overtake()
        return {"seniority": self.seniority, "overtake": overtake, "overtake_time_s": overtake_time_s,
                "contention_efficiency": self.efficiencies(0.0, 0.0)[0]}

    def to_json_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, **asdict(self),
                "step_fits": [{**asdict(fit), "runs": [list(run) for run in fit.runs],
                               "contention_by_workers": [list(pair) for pair in fit.contention_by_workers],
                               "reverse_by_workers": [list(entry) for entry in fit.reverse_by_workers]}
                              for fit in self.step_fits],
                "derived": {"line_rate_bps": self.line_rate_bps, "latency_s": self.latency_s,
                            "request_queue_s": self.request_queue_s,
                            **{k: (None if math.isinf(v) else v) for k, v in self.sharing_parameters().items()}}}


def _direction(raw: dict[str, Any], place: Place) -> DirectionProfile:
    values: dict[str, Any] = {}
    for key in DirectionProfile.__dataclass_fields__:
        if key == "trials":
            values[key] = int(number_field(raw, key, place, maximum=1e6))
        elif key.endswith("_bps"):
            values[key] = number_field(raw, key, place, maximum=MAX_BANDWIDTH_BPS, unit=" bit/s")
        elif key.startswith("overtake") or key == "contention_efficiency":
            values[key] = number_field(raw, key, place, maximum=1.0)
        else:
            values[key] = number_field(raw, key, place, maximum=3600.0)
    if values["payload_bps"] <= 0 or values["line_rate_bps"] <= 0:
        raise place.refuse("payload_bps", "is 0: the probe carried no data in this direction")
    return DirectionProfile(**values)


def link_profile_from_json(data: Any, origin: str) -> LinkProfile:
    place = Place(origin, "link profile", _FIX)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise ToolError(f"{origin} is not a link profile (no \"schema\": \"{SCHEMA_NAME}\"); {_FIX}")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ToolError(f"{origin} is link profile version {data.get('schema_version')!r}; this tool reads "
                        f"version {SCHEMA_VERSION}; {_FIX}")
    download = _direction(object_field(data, "download", place), Place(origin, "download", _FIX))
    upload = _direction(object_field(data, "upload", place), Place(origin, "upload", _FIX))
    environment = object_field(data, "environment", place, default={})
    string_field(environment, "kind", Place(origin, "environment", _FIX), default="")
    step_fits = _step_fits(data, download, origin)
    if not step_fits and min(download.trials, upload.trials) == 0:
        raise ToolError(f"{origin} has neither join trials nor step fits: nothing says how connections share the "
                        f"link; {_FIX}")
    return LinkProfile(download, upload, number_field(data, "rtt_idle_s", place, maximum=60.0), environment,
                       step_fits)


def _interpolated(fits: tuple[StepFit, ...], transfer_s: float, key: str) -> float:
    """``key`` of the step fits at ``transfer_s``: linear in log time between neighbours, flat beyond."""
    return _interpolated_by(fits, transfer_s, lambda fit: getattr(fit, key))


def _interpolated_by(fits: tuple[StepFit, ...], transfer_s: float, value: Callable[[StepFit], float]) -> float:
    """``value`` of the step fits at ``transfer_s``, interpolated as ``_interpolated`` says."""
    if transfer_s <= fits[0].transfer_s or len(fits) == 1:
        return value(fits[0])
    for short, long in zip(fits, fits[1:], strict=False):
        if transfer_s <= long.transfer_s:
            weight = math.log(transfer_s / short.transfer_s) / math.log(long.transfer_s / short.transfer_s)
            return value(short) + weight * (value(long) - value(short))
    return value(fits[-1])


def _step_fits(data: dict[str, Any], download: DirectionProfile, origin: str) -> tuple[StepFit, ...]:
    """The profile's step fits; a profile written before there were two has one ``step_fit``,
    whose transfer time its bytes and the download payload rate give."""
    place = Place(origin, "link profile", _FIX)
    if data.get("step_fit") is not None:
        raw = object_field(data, "step_fit", place)
        legacy_s = 8.0 * number_field(raw, "download_bytes", Place(origin, "step_fit", _FIX),
                                      maximum=1e12) / download.payload_bps
        return (_step_fit({"transfer_s": legacy_s, **raw}, Place(origin, "step_fit", _FIX)),)
    raw_fits = data.get("step_fits", [])
    if not isinstance(raw_fits, list):
        raise place.refuse("step_fits", "is not a list of step fits")
    fits = [_step_fit(raw if isinstance(raw, dict) else {}, Place(origin, f"step_fits[{index}]", _FIX))
            for index, raw in enumerate(raw_fits)]
    times = [fit.transfer_s for fit in fits]
    if times != sorted(set(times)):
        raise place.refuse("step_fits", "are not in increasing transfer time, each once")
    return tuple(fits)


def _step_fit(raw: dict[str, Any], place: Place) -> StepFit:
    efficiencies = {key: number_field(raw, key, place, maximum=1.0)
                    for key in ("contention_efficiency", "download_reverse_efficiency", "upload_reverse_efficiency")}
    for key, value in efficiencies.items():
        if value < 0.1:
            raise place.refuse(key, f"is {value:g}, below 0.1")
    return StepFit(**efficiencies, contention_source=string_field(raw, "contention_source", place),
                   download_bytes=int(number_field(raw, "download_bytes", place, maximum=1e12)),
                   upload_bytes=int(number_field(raw, "upload_bytes", place, maximum=1e12)),
                   compute_s=number_field(raw, "compute_s", place, maximum=3600.0),
                   transfer_s=_positive(number_field(raw, "transfer_s", place, maximum=3600.0), "transfer_s", place),
                   runs=_runs(raw.get("runs", []), place),
                   contention_by_workers=_contention_by_workers(raw.get("contention_by_workers", []), place),
                   reverse_by_workers=_reverse_by_workers(raw.get("reverse_by_workers", []), place))


def _contention_by_workers(raw: Any, place: Place) -> tuple[tuple[int, float], ...]:
    """A step fit's per-count contention efficiencies: [workers, efficiency] pairs of three or more
    workers, fewest first, each efficiency between 0.1 and 1 (none in profiles before there were any)."""
    problem = "is not a list of [workers, efficiency] pairs, three or more workers, fewest first, efficiencies 0.1-1"
    if not isinstance(raw, list) or not all(isinstance(pair, list) and len(pair) == 2 for pair in raw):
        raise place.refuse("contention_by_workers", problem)
    try:
        pairs = tuple((int(workers), float(efficiency)) for workers, efficiency in raw)
    except (TypeError, ValueError):
        raise place.refuse("contention_by_workers", problem) from None
    counts = [workers for workers, _ in pairs]
    if counts != sorted(set(counts)) or any(workers < 3 or not 0.1 <= e <= 1.0 for workers, e in pairs):
        raise place.refuse("contention_by_workers", problem)
    return pairs


def _reverse_by_workers(raw: Any, place: Place) -> tuple[tuple[int, float, float], ...]:
    """A step fit's per-count reverse efficiencies: [workers, download, upload] of three or more
    workers, fewest first, each efficiency between 0.1 and 1 (none in profiles before there were any)."""
    problem = ("is not a list of [workers, download, upload] reverse efficiencies, three or more workers, "
               "fewest first, efficiencies 0.1-1")
    if not isinstance(raw, list) or not all(isinstance(entry, list) and len(entry) == 3 for entry in raw):
        raise place.refuse("reverse_by_workers", problem)
    try:
        entries = tuple((int(workers), float(down), float(up)) for workers, down, up in raw)
    except (TypeError, ValueError):
        raise place.refuse("reverse_by_workers", problem) from None
    counts = [entry[0] for entry in entries]
    if counts != sorted(set(counts)) or any(workers < 3 or not (0.1 <= down <= 1.0 and 0.1 <= up <= 1.0)
                                            for workers, down, up in entries):
        raise place.refuse("reverse_by_workers", problem)
    return entries


def _runs(raw: Any, place: Place) -> tuple[tuple[int, float], ...]:
    if not isinstance(raw, list) or not all(isinstance(run, list) and len(run) == 2 for run in raw):
        raise place.refuse("runs", "is not a list of [workers, steps per second] pairs")
    try:
        runs = tuple((int(workers), float(rate)) for workers, rate in raw)
    except (TypeError, ValueError):
        raise place.refuse("runs", "is not a list of [workers, steps per second] pairs") from None
    if any(workers < 1 or not 0.0 <= rate < math.inf for workers, rate in runs):
        raise place.refuse("runs", "holds a worker count below 1 or a rate that is not a finite number")
    return runs


def _positive(value: float, key: str, place: Place) -> float:
    if value <= 0.0:
        raise place.refuse(key, f"is {value:g}; it must be above 0")
    return value


def load_link_profile(path: str | os.PathLike[str]) -> LinkProfile:
    path = Path(path)
    if not path.is_file():
        raise ToolError(f"{path} does not exist; give the JSON 'tracetool probe --out' wrote")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ToolError(f"{path} is not JSON; give the link profile 'tracetool probe --out' wrote") from None
    return link_profile_from_json(data, str(path))
