"""A shaped PS network on one machine: one namespace per task, joined by a bridge, PS link shaped.

Layout (names carry the creating PID so a later run can remove what a killed run left)::

    tfsim-<pid>-ps          tfsim-<pid>-br                     tfsim-<pid>-w<i>
    eth0 10.99.0.1 ---veth--- vps ]
      tbf egress (downloads)    tbf egress (uploads)
                                [ br0 ] --- vw<i> ---veth--- eth0 10.99.0.<11+i>

The bridge lives in a namespace of its own, so the host namespace gets no interface, no
address and no route: TensorFlow's servers, which listen on every interface of their
namespace, stay unreachable from outside. The PS link is shaped in both directions with
``tbf``: on the PS's own veth end for PS-to-worker traffic (parameter downloads) and on the
bridge port towards the PS for worker-to-PS traffic (gradient uploads). Deleting the
namespaces removes every veth, the bridge and the qdiscs with them.

This module only builds and removes the network; it starts no TensorFlow process.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass

from tracetool.cli_support import parse_bytes
from tracetool.cluster import leftovers, netns, tcp_settings
from tracetool.errors import ToolError

SUBNET_PREFIX = "10.99.0."
PS_ADDRESS = SUBNET_PREFIX + "1"
FIRST_WORKER_HOST = 11
PREFIX_LENGTH = 24
# veth and lo hand tbf segments of up to 64 KB (GSO): a smaller bucket drops them outright.
MIN_BURST_BYTES = 128 * 1024
# With GSO capped at a few segments the bucket can be small. A 128 KB bucket refills whenever a
# direction idles and then passes 128 KB at line rate: measured at 20mbit, a 600 KB transfer
# after an idle second took 0.20 s instead of 0.24 s, which flattered every small model.
GSO_MAX_BYTES = 4096
SMALL_BURST_BYTES = 16 * 1024
# the bucket must still cover a few timer ticks at high rates
BURST_TIME_S = 0.002
# Queue behind the bucket: a switch port's worth, a few ms of traffic (at least 32 full frames).
# The upload qdisc sits on a bridge port, where forwarded packets get no TCP-small-queues
# backpressure, so senders fill whatever queue it has. With 200 ms of queue, two uploads kept it
# full and the ACKs of concurrent downloads waited behind it: downloads fell to 17 Mbit/s of
# 100 while uploads ran, and 3 to 4 workers measured 10 to 20% below what the link allows.
# With 5 ms both directions carry 93 Mbit/s at once, as on a switched full-duplex link.
QUEUE_LATENCY_MS = 5
MIN_QUEUE_BYTES = 32 * 1514
# Linux's own default. Namespaces otherwise inherit the host's choice, and that decides how
# concurrent transfers share the link: on a host defaulting to BBR, four 9.5 MB-per-step
# workers on a 200mbit link reached 1.84 steps/s (73% of the link) with 4-10% of packets
# dropped; with CUBIC the same reached 2.30 (91%), and two workers interleaved their transfers
# almost perfectly (benchmarks/network_baseline.py).
DEFAULT_TCP_CONGESTION_CONTROL = "cubic"

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps)?\s*$", re.IGNORECASE)
# tc's own words: "bit" units are bits per second, "bps" units are bytes per second
_RATE_FACTORS = {
    "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9,
}
_QUEUE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|b|kb|mb|kib|mib)\s*$", re.IGNORECASE)
MAX_QUEUE_MS = 2000.0
MAX_QUEUE_BYTES = 1 << 30
_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s)?\s*$", re.IGNORECASE)
_LATENCY_FACTORS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_bandwidth_bps(text: str) -> float:
    """Parse a tc-style rate (``100mbit``, ``1gbit``, ``12.5mbps``; a bare number is bit/s)."""
    match = _RATE.match(text)
    if not match:
        raise ToolError(f"bad bandwidth '{text}': use a rate like 100mbit, 1gbit or 500kbit")
    value = float(match.group(1)) * _RATE_FACTORS[(match.group(2) or "bit").lower()]
    if value < 1e5:
        raise ToolError(f"bandwidth '{text}' is below 100kbit; TensorFlow's RPCs would time out")
    return value


def parse_latency_s(text: str) -> float:
    """Parse a one-way latency like ``0.2ms``, ``50us`` or ``1s`` (a bare number is milliseconds)."""
    match = _LATENCY.match(text)
    if not match:
        raise ToolError(f"bad latency '{text}': use a time like 0.5ms, 200us or 0.01s")
    return float(match.group(1)) * _LATENCY_FACTORS[(match.group(2) or "ms").lower()]


@dataclass(frozen=True)
class QueueSize:
    """The shaped link's buffer behind the token bucket: a time of traffic at the line rate, or bytes.

    Which of the two a real switch port has is a property of the network, not of this tool: a
    shallow buffer (a few ms) keeps latency low and drops early; a deep one (100 ms and more)
    lets loss-based TCP build a standing queue that every transfer waits behind."""

    ms: float | None = None
    bytes: int | None = None

    def limit_bytes(self, bandwidth_bps: float) -> int:
        """Bytes of queue at this rate; a time-sized queue holds at least 32 full frames."""
        if self.bytes is not None:
            return self.bytes
        assert self.ms is not None
        return max(MIN_QUEUE_BYTES, int(bandwidth_bps / 8 * self.ms / 1000))

    def delay_s(self, bandwidth_bps: float) -> float:
        """How long a full queue takes to drain at the line rate (the nominal time for a time-sized one)."""
        if self.ms is not None:
            return self.ms / 1000
        assert self.bytes is not None
        return 8 * self.bytes / bandwidth_bps

    def describe(self) -> str:
        return f"{self.ms:g} ms" if self.ms is not None else f"{self.bytes} bytes"

    def as_dict(self) -> dict[str, float | int | None]:
        return {"ms": self.ms, "bytes": self.bytes}


DEFAULT_QUEUE = QueueSize(ms=QUEUE_LATENCY_MS)


def parse_queue(text: str) -> QueueSize:
    """Parse a queue size: a time (``5ms``, ``0.1s``) or bytes (``64kb``, ``1mib``, ``150000b``)."""
    match = _QUEUE.match(text)
    if not match:
        raise ToolError(f"bad queue '{text}': give a time like 5ms or 100ms, or bytes like 64kb, 1mib or 150000b")
    value, unit = float(match.group(1)), match.group(2).lower()
    if unit in ("ms", "s"):
        ms = value * (1000.0 if unit == "s" else 1.0)
        if not 1.0 <= ms <= MAX_QUEUE_MS:
            raise ToolError(f"queue '{text}' is {ms:g} ms; give 1 to {MAX_QUEUE_MS:g} ms")
        return QueueSize(ms=ms)
    size = int(parse_bytes(text))
    if not 2 * 1514 <= size <= MAX_QUEUE_BYTES:
        raise ToolError(f"queue '{text}' is {size} bytes; give at least two full frames (3028 bytes) and at most 1gib")
    return QueueSize(bytes=size)


def format_bandwidth(bandwidth_bps: float) -> str:
    for unit, factor in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bandwidth_bps >= factor:
            return f"{bandwidth_bps / factor:g}{unit}"
    return f"{bandwidth_bps:g}bit"


def run_tc(namespace: str, *args: str, check: bool = True) -> str:
    result = subprocess.run(["tc", "-n", namespace, *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise ToolError(f"'tc {' '.join(args)}' in {namespace} failed: {result.stderr.strip()}")
    return result.stdout


def require_shaping() -> None:
    netns.require_namespaces()
    if shutil.which("tc") is None:
        raise ToolError("'tc' is not installed; install iproute2 to shape the PS link")


@dataclass(frozen=True)
class TaskAddress:
    job: str
    index: int
    namespace: str
    address: str


class ShapedTopology:
    """Namespaces for one PS and ``workers`` workers on a bridge; removed when the block ends.

    ``bandwidth_bps`` of None builds the same topology without shaping.
    """

    def __init__(self, workers: int, bandwidth_bps: float | None,
                 tcp_congestion_control: str = DEFAULT_TCP_CONGESTION_CONTROL,
                 queue: QueueSize = DEFAULT_QUEUE) -> None:
        if workers < 1:
            raise ToolError("a topology needs at least one worker")
        self.workers = workers
        self.bandwidth_bps = bandwidth_bps
        self.tcp_congestion_control = tcp_congestion_control
        self.queue = queue
        self._allowed_congestion_control_before: str | None = None
        self.burst_bytes = MIN_BURST_BYTES  # until GSO is capped on every veth end
        self.gso_capped = False
        self.bridge_namespace = netns.new_namespace_name("br")
        self.ps = TaskAddress("ps", 0, netns.new_namespace_name("ps"), PS_ADDRESS)
        self.worker_tasks = [
            TaskAddress("worker", i, netns.new_namespace_name(f"w{i}"), f"{SUBNET_PREFIX}{FIRST_WORKER_HOST + i}")
            for i in range(workers)
        ]
        self._created: list[str] = []

    @property
    def namespaces(self) -> list[str]:
        return [self.bridge_namespace, self.ps.namespace, *(t.namespace for t in self.worker_tasks)]

    def task(self, job: str, index: int) -> TaskAddress:
        return self.ps if job == "ps" else self.worker_tasks[index]

    def __enter__(self) -> ShapedTopology:
        require_shaping()
        leftovers.clean_after_killed_runs()
        try:
            self._build()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def _build(self) -> None:
        br = self.bridge_namespace
        for name in self.namespaces:
            self._created.append(name)  # first: a half-made namespace is removed too
            netns.create_namespace(name)
        netns.run_ip("-n", br, "link", "add", "br0", "type", "bridge")
        netns.run_ip("-n", br, "link", "set", "br0", "up")
        for task, port in [(self.ps, "vps"), *((t, f"vw{t.index}") for t in self.worker_tasks)]:
            netns.run_ip("-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", task.namespace)
            netns.run_ip("-n", br, "link", "set", port, "master", "br0")
            netns.run_ip("-n", br, "link", "set", port, "up")
            netns.run_ip("-n", task.namespace, "addr", "add", f"{task.address}/{PREFIX_LENGTH}", "dev", "eth0")
            netns.run_ip("-n", task.namespace, "link", "set", "eth0", "up")
            previous = tcp_settings.set_tcp_congestion_control(task.namespace, self.tcp_congestion_control)
            if previous is not None and self._allowed_congestion_control_before is None:
                self._allowed_congestion_control_before = previous
        if self.bandwidth_bps is not None:
            self.gso_capped = self._cap_gso()
            if self.gso_capped:
                self.burst_bytes = max(SMALL_BURST_BYTES, int(self.bandwidth_bps / 8 * BURST_TIME_S))
            self._shape(self.ps.namespace, "eth0")  # PS -> workers: parameter downloads
            self._shape(br, "vps")  # workers -> PS: gradient uploads

    def _cap_gso(self) -> bool:
        """Cap GSO on every veth end so no packet reaching a shaped qdisc exceeds a few segments."""
        ends = [(self.bridge_namespace, "vps"), (self.ps.namespace, "eth0")]
        for t in self.worker_tasks:
            ends += [(self.bridge_namespace, f"vw{t.index}"), (t.namespace, "eth0")]
        for namespace, device in ends:
            result = netns.run_ip("-n", namespace, "link", "set", "dev", device, "gso_max_size", str(GSO_MAX_BYTES),
                                  check=False)
            if result.returncode != 0:
                return False
        return True

    @property
    def queue_limit_bytes(self) -> int:
        """Bytes tbf holds: the bucket plus the queue (by default 5 ms of traffic, at least 32 full frames)."""
        assert self.bandwidth_bps is not None
        return self.burst_bytes + self.queue.limit_bytes(self.bandwidth_bps)

    def shaping_facts(self) -> dict[str, object]:
        """What the shaped link is, as measurements and link profiles record it."""
        assert self.bandwidth_bps is not None
        return {"qdisc": "tbf", "burst_bytes": self.burst_bytes,
                "gso_max_bytes": GSO_MAX_BYTES if self.gso_capped else None,
                "queue_limit_bytes": self.queue_limit_bytes,
                "queue": self.queue.as_dict(),
                "queue_latency_ms": self.queue.delay_s(self.bandwidth_bps) * 1e3,
                "tcp_congestion_control": tcp_settings.tcp_congestion_control(self.ps.namespace)}

    def shaped_qdiscs(self) -> dict[str, dict[str, float]]:
        """Each shaped direction's rate, bucket and queue as the kernel reports them (read back, not
        assumed). tc shows a tbf's queue as the latency it adds at the rate, so bytes = latency x rate."""
        shaped = {}
        for direction, namespace, device in (("download", self.ps.namespace, "eth0"),
                                             ("upload", self.bridge_namespace, "vps")):
            qdiscs = json.loads(run_tc(namespace, "-j", "qdisc", "show", "dev", device) or "[]")
            options = next((q for q in qdiscs if q.get("root") and q.get("kind") == "tbf"), {}).get("options") or {}
            rate_bytes = float(options.get("rate", 0))
            shaped[direction] = {"rate_bps": 8 * rate_bytes, "burst_bytes": float(options.get("burst", 0)),
                                 "queue_bytes": float(options.get("lat", 0)) * 1e-6 * rate_bytes}
        return shaped

    def _shape(self, namespace: str, device: str) -> None:
        assert self.bandwidth_bps is not None
        run_tc(namespace, "qdisc", "replace", "dev", device, "root", "tbf",
               "rate", f"{int(self.bandwidth_bps)}bit", "burst", str(self.burst_bytes),
               "limit", str(self.queue_limit_bytes))

    def qdisc_report(self) -> str:
        """tc's own view of the two shaped qdiscs (for logs and tests)."""
        lines = []
        for namespace, device in ((self.ps.namespace, "eth0"), (self.bridge_namespace, "vps")):
            out = run_tc(namespace, "-s", "qdisc", "show", "dev", device, check=False)
            lines.append(f"{namespace}/{device}: {out.strip()}")
        return "\n".join(lines)

    def link_counters(self) -> dict[str, dict[str, int]]:
        """Bytes (with headers), packets and drops so far on the two shaped qdiscs, by direction."""
        counters = {}
        for direction, namespace, device in (("download", self.ps.namespace, "eth0"),
                                             ("upload", self.bridge_namespace, "vps")):
            try:
                qdiscs = json.loads(run_tc(namespace, "-s", "-j", "qdisc", "show", "dev", device, check=False) or "[]")
            except json.JSONDecodeError:
                qdiscs = []
            root = next((q for q in qdiscs if q.get("root")), {})
            counters[direction] = {k: int(root.get(k, 0)) for k in ("bytes", "packets", "drops", "overlimits")}
        return counters

    def remove(self) -> None:
        """Remove the namespaces this topology created (their processes, veths, bridge and qdiscs go with
        them); only those, so stopping early costs time in proportion to what was built."""
        for name in reversed(self._created):
            netns.delete_namespace(name)
        self._created.clear()
        if self._allowed_congestion_control_before is not None:
            tcp_settings.restore_allowed_congestion_control(self._allowed_congestion_control_before)
            self._allowed_congestion_control_before = None

    def command_in(self, job: str, index: int, argv: list[str]) -> list[str]:
        return netns.command_in_namespace(self.task(job, index).namespace, argv)
