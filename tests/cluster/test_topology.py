"""The shaped topology: rates parse like tc's, the PS link is shaped both ways, nothing is left behind."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import needs_root
from tracetool.cluster import netns, tcp_settings
from tracetool.cluster.topology import (
    MIN_QUEUE_BYTES,
    QueueSize,
    ShapedTopology,
    format_bandwidth,
    parse_bandwidth_bps,
    parse_latency_s,
    parse_queue,
)
from tracetool.errors import ToolError


@pytest.mark.parametrize(
    ("text", "bps"),
    [("100mbit", 100e6), ("1gbit", 1e9), ("500kbit", 500e3), ("12.5mbps", 100e6), ("2000000", 2e6), ("10Mbit", 10e6)],
)
def test_bandwidth_parses_with_tc_units(text: str, bps: float):
    """'bit' units are bits per second and 'bps' units bytes per second, as in tc."""
    assert parse_bandwidth_bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["fast", "100 mb", "-5mbit", "", "10kbit"])
def test_bad_bandwidth_is_refused(text: str):
    """Unparseable or uselessly low rates raise a one-line ToolError."""
    with pytest.raises(ToolError):
        parse_bandwidth_bps(text)


def test_latency_parses_with_units():
    """A bare number is milliseconds; us, ms and s are understood."""
    assert parse_latency_s("0.5") == pytest.approx(0.5e-3)
    assert parse_latency_s("200us") == pytest.approx(200e-6)
    assert parse_latency_s("0.01s") == pytest.approx(0.01)


def test_bandwidth_formats_back():
    """A parsed rate prints in tc's words."""
    assert format_bandwidth(parse_bandwidth_bps("100mbit")) == "100mbit"


def _in_ns(topology: ShapedTopology, job: str, index: int, code: str) -> list[str]:
    return topology.command_in(job, index, [sys.executable, "-c", code])


_SINK = """
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 5001)); s.listen()
c, _ = s.accept(); n = 0; t0 = None
while True:
    d = c.recv(1 << 20)
    if not d: break
    t0 = t0 or time.monotonic(); n += len(d)
print(n * 8 / (time.monotonic() - t0))
"""


def _source(address: str, megabytes: int) -> str:
    return (f"import socket, time\nfor _ in range(50):\n    try:\n"
            f"        s = socket.create_connection(('{address}', 5001))\n"
            "        break\n    except OSError:\n        time.sleep(0.1)\n"
            f"s.sendall(b'x' * {megabytes * 1_000_000}); s.close()")


@pytest.mark.cluster
@needs_root
def test_ps_link_is_shaped_both_ways_and_removed():
    """At 40mbit, a bulk transfer in either direction of the PS link runs at about 40 Mbit/s; all is removed after."""
    with ShapedTopology(workers=1, bandwidth_bps=40e6) as topology:
        names = topology.namespaces
        assert set(names) <= set(netns.list_namespaces())
        rates = {}
        for direction, (sink, src, address) in {
            "upload": (("ps", 0), ("worker", 0), topology.ps.address),
            "download": (("worker", 0), ("ps", 0), topology.worker_tasks[0].address),
        }.items():
            server = subprocess.Popen(_in_ns(topology, *sink, _SINK), stdout=subprocess.PIPE, text=True)
            time.sleep(0.3)
            subprocess.run(_in_ns(topology, *src, _source(address, 10)), check=True, timeout=30)
            rates[direction] = float(server.communicate(timeout=30)[0])
        assert "tbf" in topology.qdisc_report()
        counters = topology.link_counters()
        # 10 MB each way plus headers went through the two shaped qdiscs
        assert counters["download"]["bytes"] > 10_000_000 and counters["upload"]["bytes"] > 10_000_000
    for direction, rate in rates.items():
        assert 0.8 * 40e6 < rate < 1.25 * 40e6, (direction, rate)
    assert not set(names) & set(netns.list_namespaces())


_TIMED_SINK = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', int(sys.argv[1]))); s.listen()
c, _ = s.accept(); n = 0; t0 = time.monotonic()
while time.monotonic() < t0 + float(sys.argv[2]):
    n += len(c.recv(1 << 20))
print(n * 8 / (time.monotonic() - t0))
"""

_ENDLESS_SOURCE = """
import socket, sys, time
for _ in range(50):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); break
    except OSError:
        time.sleep(0.1)
try:
    while True:
        s.sendall(b'x' * 1_000_000)
except OSError:
    pass
"""


@pytest.mark.cluster
@needs_root
def test_downloads_keep_their_rate_while_uploads_run():
    """Both directions of the PS link busy at once, two flows each way: neither direction may
    starve. A 200 ms upload queue once held the downloads' ACKs and cut them to 17 of 100 Mbit/s."""

    def python(job: str, index: int, code: str, *args: object) -> subprocess.Popen:
        return subprocess.Popen(topology.command_in(job, index, [sys.executable, "-c", code, *map(str, args)]),
                                stdout=subprocess.PIPE, text=True)

    with ShapedTopology(workers=2, bandwidth_bps=100e6) as topology:
        window_s = 4
        sinks = {("down", i): python("worker", i, _TIMED_SINK, 5001, window_s) for i in range(2)}
        sinks.update({("up", i): python("ps", 0, _TIMED_SINK, 5002 + i, window_s) for i in range(2)})
        time.sleep(0.3)
        sources = [python("ps", 0, _ENDLESS_SOURCE, w.address, 5001) for w in topology.worker_tasks]
        sources += [python("worker", i, _ENDLESS_SOURCE, topology.ps.address, 5002 + i) for i in range(2)]
        try:
            rates = {key: float(sink.communicate(timeout=30)[0]) for key, sink in sinks.items()}
        finally:
            for source in sources:
                source.kill()
                source.wait()
    down = sum(rate for (direction, _), rate in rates.items() if direction == "down")
    up = sum(rate for (direction, _), rate in rates.items() if direction == "up")
    assert down > 0.8 * 100e6 and up > 0.8 * 100e6, (down, up)


@pytest.mark.cluster
@needs_root
def test_host_namespace_gets_no_interface():
    """The bridge lives in its own namespace: the host's interface list is unchanged by a topology."""
    before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    with ShapedTopology(workers=2, bandwidth_bps=None):
        during = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert len(during.splitlines()) == len(before.splitlines())


@needs_root
@pytest.mark.parametrize("algorithm", ["cubic", "reno"])
def test_tasks_use_the_requested_tcp_congestion_control(algorithm: str):
    """Every task namespace uses the chosen congestion control, whatever the host's default, and
    the host's list of allowed algorithms is as it was afterwards."""
    allowed_before = open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read()
    with ShapedTopology(2, 50e6, algorithm) as topo:
        used = {tcp_settings.tcp_congestion_control(t.namespace) for t in [topo.ps, *topo.worker_tasks]}
    assert used == {algorithm}
    assert open("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read() == allowed_before


@needs_root
def test_unknown_tcp_congestion_control_is_refused():
    """An algorithm the kernel does not have is a one-line error and leaves no namespace."""
    with pytest.raises(ToolError, match="not available"):
        with ShapedTopology(1, 50e6, "no-such-cc"):
            pass
    assert not [n for n in netns.list_namespaces() if n.startswith(netns.new_namespace_name(""))]


@pytest.mark.parametrize(("text", "queue"), [
    ("5ms", QueueSize(ms=5.0)), ("0.1s", QueueSize(ms=100.0)), ("250MS", QueueSize(ms=250.0)),
    ("64kb", QueueSize(bytes=64_000)), ("1mib", QueueSize(bytes=1 << 20)), ("150000b", QueueSize(bytes=150_000)),
])
def test_queue_parses_as_time_or_bytes(text: str, queue: QueueSize):
    assert parse_queue(text) == queue


@pytest.mark.parametrize(("text", "words"), [
    ("100", "give a time like 5ms"), ("deep", "give a time like 5ms"), ("0.5ms", "1 to 2000 ms"),
    ("3s", "1 to 2000 ms"), ("1000b", "two full frames"), ("2gib", "bad queue"), ("-5ms", "bad queue"),
])
def test_bad_queue_is_refused_in_one_line(text: str, words: str):
    with pytest.raises(ToolError, match=words) as caught:
        parse_queue(text)
    assert "\n" not in str(caught.value)


def test_a_time_sized_queue_holds_that_much_traffic_at_the_line_rate():
    assert QueueSize(ms=100).limit_bytes(100e6) == 1_250_000
    assert QueueSize(ms=5).limit_bytes(10e6) == MIN_QUEUE_BYTES  # 6.25 KB is below 32 full frames
    assert QueueSize(bytes=64_000).delay_s(100e6) == pytest.approx(0.00512)


@pytest.mark.cluster
@needs_root
@pytest.mark.parametrize("queue", [QueueSize(ms=5), QueueSize(ms=100), QueueSize(bytes=300_000)])
def test_queue_is_applied_to_both_shaped_directions(queue: QueueSize):
    """The queue tc reports (read back from the kernel, as the latency it adds at the rate) is the one asked for."""
    with ShapedTopology(workers=1, bandwidth_bps=100e6, queue=queue) as topology:
        for shaped in topology.shaped_qdiscs().values():
            assert shaped["rate_bps"] == pytest.approx(100e6)
            assert shaped["burst_bytes"] == topology.burst_bytes
            assert shaped["queue_bytes"] == pytest.approx(queue.limit_bytes(100e6), rel=0.01)
        assert topology.shaping_facts()["queue"] == queue.as_dict()
