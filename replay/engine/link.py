"""The network a replay runs on: per-direction bandwidth, latency and per-transfer overhead.

A transfer of ``b`` bytes occupies its direction of the PS interface (and its worker's interface)
for ``8 b`` bits at the rate the sharing model gives it; it is then delivered after the
direction's latency plus the per-transfer overhead, which model RPC handling and propagation
and do not occupy the link. This module only describes links; it does not simulate them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from replay.units import check_bandwidth_bps
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import StepGraph

# Used when a graph has no link calibration (foreign traces): a fast local link.
DEFAULT_PROFILED_BANDWIDTH_BPS = 10e9

# A tensor's bytes travel as TCP payload. Per Ethernet frame of an MTU-sized segment, IPv4 (20 B),
# TCP with timestamps (32 B) and the Ethernet header (14 B) ride along, and a shaper or NIC counts
# them all against the line rate: at MTU 1500, 1448 payload bytes per 1514 counted bytes (95.6%).
# Measured here: bulk TCP through a 100mbit tbf carries 95.7 Mbit/s of payload.
DEFAULT_MTU = 1500
IP_TCP_HEADER_BYTES = 52
ETHERNET_HEADER_BYTES = 14
# A direction also carries the ACKs of the other direction's data: one 66-byte frame (Ethernet,
# IPv4, TCP with timestamps) per two full segments (delayed ACK). When both directions are busy
# that is 2.2% of each line at MTU 1500. Measured here: a one-worker alexnet step put 2.472 MB on
# the download line for 2.313 MB of payload down and 2.313 MB up, 2.3% more than its data frames
# (2.418 MB); with both directions busy the links carried at most 93.5% of the line as payload.
ACK_FRAME_BYTES = ETHERNET_HEADER_BYTES + IP_TCP_HEADER_BYTES
SEGMENTS_PER_ACK = 2

# How fast the gradient bytes another worker queues in the upload direction grow, in seconds of
# queue per second since its upload began, up to the link's request queue (``LinkConfig``). A
# worker's next parameter requests leave behind them. Fitted on the deep-buffer CUBIC points at
# 25 and 50mbit (alexnet, inception; benchmarks/request_queue_fit.py): 0.3 brings inception's two
# workers from +19.7% to +1.7% with runs spread over both regimes (3.56-4.38 steps/s; measured
# 3.24-4.60), where the whole backlog at once (no growth limit) locks every seed in the slow
# regime (-15% at a 40 ms cap). Raw TCP's queue grows faster (benchmarks/upload_queue_ramp.py: about
# 1 s/s after 2 s of idle, there at once after 0.3 s; gRPC's calls alike), so this is not a
# property of the transport a probe could measure, but of TensorFlow's schedule of gradients. Left
# out of the fit, inception at 50mbit and resnet at 25mbit on the same link, with the probe's
# calibration replayed with the wait too, read about as well as without it.
REQUEST_QUEUE_GROWTH = 0.3
# A bucket deeper than this is a mistake (units), not a shaper: 1 GB.
MAX_BURST_BYTES = 1e9


def efficiency_for_workers(single: float, by_workers: tuple[tuple[int, float], ...], workers: int) -> float:
    """The contention efficiency of ``workers`` from one fitted per count (fewest workers first):
    the largest count up to ``workers``; below the first, the single efficiency. Links and link
    profiles pick it the same way."""
    chosen = single
    for count, efficiency in by_workers:
        if count <= workers:
            chosen = efficiency
    return chosen


def reverse_for_workers(single: tuple[float, float], by_workers: tuple[tuple[int, float, float], ...],
                        workers: int) -> tuple[float, float]:
    """The (download, upload) reverse efficiencies of ``workers`` from ones fitted per count, picked
    as ``efficiency_for_workers`` picks the contention efficiency."""
    chosen = single
    for count, down, up in by_workers:
        if count <= workers:
            chosen = (down, up)
    return chosen


def payload_efficiency_for_mtu(mtu: int) -> float:
    """Fraction of the line rate left for tensor bytes with TCP/IPv4 over Ethernet at this MTU."""
    if mtu <= IP_TCP_HEADER_BYTES + 8 or mtu > 65536:
        raise ToolError(f"--mtu {mtu} is not a usable Ethernet MTU; give e.g. 1500 or 9000")
    return (mtu - IP_TCP_HEADER_BYTES) / (mtu + ETHERNET_HEADER_BYTES)


def ack_bytes_per_payload_byte(mtu: int) -> float:
    """Line bytes of ACKs one direction carries per payload byte the other direction delivers."""
    payload_efficiency_for_mtu(mtu)  # the same MTU check
    return ACK_FRAME_BYTES / (SEGMENTS_PER_ACK * (mtu - IP_TCP_HEADER_BYTES))


@dataclass(frozen=True)
class LinkConfig:
    """The PS link in both directions. ``worker_bandwidth_bps`` is each worker's own interface
    (both directions); ``None`` means the same bandwidth as the PS interface.
    ``worker_bandwidths_bps`` gives the first workers interfaces of their own (a mixed cluster:
    some hosts on 1 Gbit/s, some on 100 Mbit/s); workers past the list have the default.

    Bandwidths are line rates; ``payload_efficiency`` is the part of them that carries tensor
    bytes (1.0 for a link calibrated from the trace, whose rates are already payload rates).
    ``reverse_ack_overhead`` is the line bytes of ACKs per payload byte of the other direction:
    while the other direction carries data, this one has that much less room for its own.
    ``contention_efficiency`` is the share of a direction's payload rate that arrives while two
    or more workers' connections send on it at once: they overflow the shared drop-tail queue,
    and loss recovery leaves the line idle now and then, which one connection alone (or workers
    taking turns) does not. 1.0 means no such loss; ``benchmarks/network_baseline.py`` measures
    it for a link.
    ``download_reverse_efficiency`` and ``upload_reverse_efficiency`` are the share of a
    direction's payload rate that a *lone* transfer gets while the other direction carries
    data: that data queues ahead of this direction's ACKs and requests at the other
    direction's buffer, so a deep buffer stretches a lone connection's round trip (its window
    regrows slowly after idle, its request arrives late). Two or more connections on the
    direction keep its line busy between them and pay the contention efficiency instead.
    1.0 means only the ACK bytes cost; ``tracetool.measure.link_calibration`` fits them to a
    link probe."""

    download_bandwidth_bps: float
    upload_bandwidth_bps: float
    latency_s: float = 0.0
    per_transfer_overhead_s: float = 0.0
    worker_bandwidth_bps: float | None = None
    worker_bandwidths_bps: tuple[float, ...] = ()
    description: str = ""
    payload_efficiency: float = 1.0
    reverse_ack_overhead: float = 0.0
    contention_efficiency: float = 1.0
    download_reverse_efficiency: float = 1.0
    upload_reverse_efficiency: float = 1.0
    # (workers, efficiency) pairs, fewest workers first: a replay of N workers takes the efficiency of
    # the largest count up to N, and contention_efficiency below the first. A probe's three workers may
    # lose less than its four, or more (link_calibration fits one per probed count).
    contention_by_workers: tuple[tuple[int, float], ...] = ()
    # (workers, download, upload) reverse efficiencies, fewest workers first, picked per replay as the
    # contention efficiency is. Where three workers of a probe pipeline faster than the reverse loss
    # fitted at two allows even with loss-free contention, that count keeps a smaller loss of its own.
    reverse_by_workers: tuple[tuple[int, float, float], ...] = ()
    # The most a worker's parameter requests wait behind other workers' gradients standing in the
    # upload direction's queue, beyond ``latency_s``: a deep drop-tail buffer that loss-based TCP
    # keeps full (the probe's standing upload queue less the latency's share). 0: no such wait.
    request_queue_s: float = 0.0
    # How fast that backlog grows, in seconds of queue per second since another worker's upload
    # began. A link property so that studies can vary it (benchmarks/request_queue_fit.py); the
    # network alone does not give it (``REQUEST_QUEUE_GROWTH``), so every link has the fitted one.
    request_queue_growth: float = REQUEST_QUEUE_GROWTH
    # The depth of a token bucket in front of the line, in line bytes (a ``tbf`` shaper's burst, a
    # cloud policer's): while a direction carries nothing the bucket refills at the line rate, and
    # the next transfer starting there passes up to that much at once. A lone worker's link idles
    # each way every step, so at low rates a small model's step is that much shorter. 0: none.
    burst_bytes: float = 0.0

    def __post_init__(self) -> None:
        check_bandwidth_bps(self.download_bandwidth_bps)
        check_bandwidth_bps(self.upload_bandwidth_bps)
        if self.worker_bandwidth_bps is not None:
            check_bandwidth_bps(self.worker_bandwidth_bps)
        for bandwidth in self.worker_bandwidths_bps:
            check_bandwidth_bps(bandwidth)
        if self.latency_s < 0 or self.per_transfer_overhead_s < 0:
            raise ToolError("link latency and per-transfer overhead must be zero or positive")
        if not 0.0 <= self.request_queue_s <= 3600.0:
            raise ToolError(f"request queue must be between 0 and 3600 s, got {self.request_queue_s:g}")
        if not 0.0 < self.request_queue_growth <= 10.0:
            raise ToolError("request queue growth must be in (0, 10] s of queue per s, "
                            f"got {self.request_queue_growth:g}")
        if not 0.0 <= self.burst_bytes <= MAX_BURST_BYTES:
            raise ToolError(f"link burst must be between 0 and {MAX_BURST_BYTES:.0f} bytes, got {self.burst_bytes:g}")
        if not 0.0 < self.payload_efficiency <= 1.0:
            raise ToolError(f"payload efficiency must be in (0, 1], got {self.payload_efficiency}")
        if not 0.0 <= self.reverse_ack_overhead < 0.5:
            raise ToolError(f"reverse ACK overhead must be in [0, 0.5), got {self.reverse_ack_overhead}")
        if not 0.1 <= self.contention_efficiency <= 1.0:
            raise ToolError(f"contention efficiency must be in [0.1, 1], got {self.contention_efficiency:g}; "
                            "it is the share of the line contending connections deliver")
        counts = [workers for workers, _ in self.contention_by_workers]
        if counts != sorted(set(counts)) or any(workers < 2 for workers in counts):
            raise ToolError(f"contention efficiencies by worker count must be for distinct counts of 2 or more, "
                            f"fewest first; got {self.contention_by_workers}")
        for workers, efficiency in self.contention_by_workers:
            if not 0.1 <= efficiency <= 1.0:
                raise ToolError(f"contention efficiency for {workers} workers must be in [0.1, 1], got {efficiency:g}")
        for name in ("download_reverse_efficiency", "upload_reverse_efficiency"):
            value = getattr(self, name)
            if not 0.1 <= value <= 1.0:
                raise ToolError(f"{name.replace('_', ' ')} must be in [0.1, 1], got {value:g}; it is the share "
                                "of a direction's rate left while the other direction carries data")
        reverse_counts = [entry[0] for entry in self.reverse_by_workers]
        if (reverse_counts != sorted(set(reverse_counts)) or any(n < 2 for n in reverse_counts)
                or any(len(entry) != 3 or not all(0.1 <= e <= 1.0 for e in entry[1:])
                       for entry in self.reverse_by_workers)):
            raise ToolError("reverse efficiencies by worker count must be (workers, download, upload) for distinct "
                            f"counts of 2 or more, fewest first, each efficiency in [0.1, 1]; got "
                            f"{self.reverse_by_workers}")

    def for_workers(self, workers: int) -> LinkConfig:
        """This link as a replay of ``workers`` workers uses it: one contention efficiency and one
        pair of reverse efficiencies."""
        chosen = efficiency_for_workers(self.contention_efficiency, self.contention_by_workers, workers)
        single = (self.download_reverse_efficiency, self.upload_reverse_efficiency)
        down, up = reverse_for_workers(single, self.reverse_by_workers, workers)
        if (chosen, down, up) == (self.contention_efficiency, *single):
            return self
        return replace(self, contention_efficiency=chosen, download_reverse_efficiency=down,
                       upload_reverse_efficiency=up)

    def directions_coupled(self) -> bool:
        """Whether a direction's rate depends on the other direction carrying data."""
        return (self.reverse_ack_overhead > 0.0 or self.download_reverse_efficiency < 1.0
                or self.upload_reverse_efficiency < 1.0)

    def burst_payload_bits(self) -> float:
        """The bucket's depth in the tensor bits it lets through at once."""
        return 8.0 * self.burst_bytes * self.payload_efficiency

    def download_payload_bps(self) -> float:
        return self.download_bandwidth_bps * self.payload_efficiency

    def upload_payload_bps(self) -> float:
        return self.upload_bandwidth_bps * self.payload_efficiency

    def download_payload_bps_while_uploading(self) -> float:
        """Download payload rate while uploads run: their ACKs take their share of the line."""
        acks = self.reverse_ack_overhead * self.upload_payload_bps()
        return max(0.0, self.download_bandwidth_bps - acks) * self.payload_efficiency

    def upload_payload_bps_while_downloading(self) -> float:
        """Upload payload rate while downloads run."""
        acks = self.reverse_ack_overhead * self.download_payload_bps()
        return max(0.0, self.upload_bandwidth_bps - acks) * self.payload_efficiency

    def reverse_efficiency(self, upload: bool) -> float:
        """A lone transfer's share of its direction's rate while the other direction carries data."""
        return self.upload_reverse_efficiency if upload else self.download_reverse_efficiency

    def worker_download_payload_bps(self) -> float:
        return (self.worker_bandwidth_bps or self.download_bandwidth_bps) * self.payload_efficiency

    def worker_upload_payload_bps(self) -> float:
        return (self.worker_bandwidth_bps or self.upload_bandwidth_bps) * self.payload_efficiency

    def worker_payload_caps(self, workers: int, upload: bool) -> float | list[float]:
        """Each worker's interface cap (payload bits/s) in one direction: one number when every
        worker's is the same, so links of equal workers keep their faster equal-share path."""
        default = self.worker_upload_payload_bps() if upload else self.worker_download_payload_bps()
        own = [b * self.payload_efficiency for b in self.worker_bandwidths_bps[:workers]]
        caps = own + [default] * (workers - len(own))
        return default if all(c == default for c in caps) else caps

    def with_bandwidth(self, bandwidth_bps: float) -> LinkConfig:
        return replace(self, download_bandwidth_bps=bandwidth_bps, upload_bandwidth_bps=bandwidth_bps)


def profiled_link(graph: StepGraph) -> LinkConfig:
    """The effective link of the single-worker profile, from the graph's link calibration."""
    cal = graph.link_calibration
    down = float(cal.get("download_bandwidth_bps", 0.0) or 0.0)
    up = float(cal.get("upload_bandwidth_bps", 0.0) or 0.0)
    if down <= 0 and up <= 0:
        down = up = DEFAULT_PROFILED_BANDWIDTH_BPS
        note = f"profiled link (no calibration in the graph; assumed {DEFAULT_PROFILED_BANDWIDTH_BPS:g} bit/s)"
    else:
        down = down if down > 0 else up
        up = up if up > 0 else down
        note = "profiled link (calibrated from the trace)"
    return LinkConfig(
        download_bandwidth_bps=down,
        upload_bandwidth_bps=up,
        latency_s=0.0,
        per_transfer_overhead_s=max(0.0, float(cal.get("per_transfer_overhead_s", 0.0) or 0.0)),
        description=note,
    )


def target_link(
    graph: StepGraph,
    bandwidth_bps: float | None,
    latency_s: float = 0.0,
    worker_bandwidth_bps: float | None = None,
    mtu: int = DEFAULT_MTU,
    contention_efficiency: float = 1.0,
    worker_bandwidths_bps: tuple[float, ...] = (),
    reverse_efficiencies: tuple[float, float] = (1.0, 1.0),
    contention_by_workers: tuple[tuple[int, float], ...] = (),
    request_queue_s: float = 0.0,
    burst_bytes: float = 0.0,
    reverse_by_workers: tuple[tuple[int, float, float], ...] = (),
) -> LinkConfig:
    """The link to predict for: the user's line rate (both directions) and latency, with the
    per-transfer overhead calibrated on the profiled link and the headers of ``mtu``-sized
    frames taken off the line rate. ``None`` bandwidth means the profiled link (payload rates).
    ``reverse_efficiencies`` (download, upload), ``contention_by_workers`` and
    ``reverse_by_workers`` are a measured network's (a link profile's step fits, or validate's
    fit to its twin probe); ``request_queue_s`` its deep upload queue and
    ``burst_bytes`` its shaper's bucket (``LinkConfig``)."""
    base = profiled_link(graph)
    down, up = reverse_efficiencies
    if bandwidth_bps is None:
        return replace(base, latency_s=latency_s, worker_bandwidth_bps=worker_bandwidth_bps,
                       contention_efficiency=contention_efficiency, worker_bandwidths_bps=worker_bandwidths_bps,
                       download_reverse_efficiency=down, upload_reverse_efficiency=up,
                       contention_by_workers=contention_by_workers, request_queue_s=request_queue_s,
                       burst_bytes=burst_bytes, reverse_by_workers=reverse_by_workers)
    check_bandwidth_bps(bandwidth_bps)
    return LinkConfig(
        download_bandwidth_bps=bandwidth_bps,
        upload_bandwidth_bps=bandwidth_bps,
        latency_s=latency_s,
        per_transfer_overhead_s=base.per_transfer_overhead_s,
        worker_bandwidth_bps=worker_bandwidth_bps,
        worker_bandwidths_bps=worker_bandwidths_bps,
        description=f"target link (line rate; MTU {mtu})",
        payload_efficiency=payload_efficiency_for_mtu(mtu),
        reverse_ack_overhead=ack_bytes_per_payload_byte(mtu),
        contention_efficiency=contention_efficiency,
        download_reverse_efficiency=down,
        upload_reverse_efficiency=up,
        contention_by_workers=contention_by_workers,
        request_queue_s=request_queue_s,
        burst_bytes=burst_bytes,
        reverse_by_workers=reverse_by_workers,
    )
