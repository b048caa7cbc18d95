"""The probe's two ends on loopback: a real server thread and a client running plans against it."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracetool.measure import probe_agent
from tracetool.measure.link_probe import summarize_spans


def _free_port_pair() -> int:
    """A port whose next port is free too (the server's gRPC transfers listen there), taken below
    the ephemeral range: the suite's own connections take ephemeral source ports, and one of them
    on the next port made the gRPC bind fail."""
    low, _high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for _ in range(200):
        port = random.randrange(10_000, max(low - 2, 20_000))  # a low ephemeral range: the bind check still guards
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two adjacent free ports below the ephemeral range")


def _start_server() -> tuple[int, threading.Thread]:
    """A probe server thread that is listening, on a fresh pair of ports if a pair was taken
    between the check and the bind."""
    for _ in range(5):
        port = _free_port_pair()
        failures: list[BaseException] = []

        def serve(port: int = port, failures: list[BaseException] = failures) -> None:
            try:
                probe_agent.serve(port, "127.0.0.1")
            except OSError as exc:
                failures.append(exc)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while thread.is_alive() and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port, thread
            except OSError:
                time.sleep(0.02)
        thread.join(timeout=5)
        assert failures, "the probe server neither listened nor failed within 30 s"
    raise RuntimeError(f"the probe server could not listen: {failures[-1]}")


@pytest.fixture
def server() -> Iterator[int]:
    """A probe server on loopback until the test ends it with QUIT."""
    port, thread = _start_server()
    yield port
    link = probe_agent.ServerLink("127.0.0.1", port)
    link.quit()
    link.close()
    thread.join(timeout=5)
    assert not thread.is_alive()


@pytest.mark.parametrize("transport", ["tcp", "grpc"])
def test_a_plan_of_steps_records_each_step_after_the_warm_up_on_the_servers_clock(server: int, transport: str):
    """Steps of 200 kB each way with 20 ms of compute for 0.3 s of warm-up and 1.2 s of window,
    over the agent's TCP connection or as gRPC calls to the server's next port: every recorded
    step began after the warm-up, its download ends before its compute, its upload starts 20 ms
    later, and the spans read as a probe point of one worker."""
    link = probe_agent.ServerLink("127.0.0.1", server)
    t0 = link.now() + 0.1
    link.close()
    plan = [{"op": "steps", "download": 200_000, "upload": 200_000, "compute": 0.02, "at": t0,
             "warm_until": t0 + 0.3, "until": t0 + 1.5, "transport": transport}]
    result = probe_agent.run("127.0.0.1", server, plan)
    spans = result[0]["spans"]
    assert len(spans) >= 5  # about 30 ms a step on loopback: a busy host still fits five
    for start, downloaded, upload_start, acknowledged in spans:
        assert t0 + 0.3 <= start < downloaded < upload_start < acknowledged
        assert upload_start - downloaded >= 0.02
        assert start < t0 + 1.5
    assert all(later[0] >= earlier[3] for earlier, later in zip(spans, spans[1:], strict=False))
    point = summarize_spans([[tuple(span) for span in spans]], 200_000, 200_000)
    assert point.workers == 1 and point.steps_per_second > 10
    assert point.down_contended_s == 0.0 and point.up_contended_s == 0.0


def test_a_plan_of_transfers_and_pings(server: int):
    result = probe_agent.run("127.0.0.1", server, [{"op": "down", "bytes": 3_000_000}, {"op": "up", "bytes": 1_000},
                                                   {"op": "ping", "count": 3, "interval": 0.0}])
    down, up, pings = result
    assert down["start"] <= down["first"] <= down["end"]
    assert up["start"] <= up["end"]
    assert len(pings["rtts"]) == 3 and all(rtt > 0 for rtt in pings["rtts"])


def test_bulk_transfers_with_a_timeline_report_the_segment_count_of_the_receiving_end(server: int):
    """A download's segment count is the client's, an upload's the server's (sent back after its
    acknowledgement); both on the server's clock, within the transfer, counting up, and the whole
    transfer's segments carrying its bytes (loopback's segments are up to 64 kB each)."""
    down, up, after = probe_agent.run("127.0.0.1", server, [
        {"op": "down", "bytes": 3_000_000, "timeline": True}, {"op": "up", "bytes": 2_000_000, "timeline": True},
        {"op": "ping", "count": 1, "interval": 0.0}])
    for transfer, size in ((down, 3_000_000), (up, 2_000_000)):
        readings = transfer["segments"]
        assert len(readings) >= 2
        assert all(a[2] <= b[2] for a, b in zip(readings, readings[1:], strict=False))
        assert all(transfer["start"] <= before <= after <= transfer["end"] for before, after, _ in readings)
        assert size / 65_536 <= transfer["transfer_segments"] <= size / 100
    assert len(after["rtts"]) == 1  # the reply of readings left nothing behind on the connection


def test_pings_stop_at_their_until_time_on_the_servers_clock(server: int):
    link = probe_agent.ServerLink("127.0.0.1", server)
    t0 = link.now() + 0.05
    link.close()
    pings = probe_agent.run("127.0.0.1", server, [{"op": "ping", "count": 10_000, "interval": 0.01, "at": t0,
                                                   "until": t0 + 0.2}])[0]
    assert 5 <= len(pings["rtts"]) < 25
    assert t0 - 0.01 <= pings["times"][0] and pings["times"][-1] < t0 + 0.2


def test_an_unknown_action_is_refused(server: int):
    with pytest.raises(ValueError, match="unknown probe action 'jump'"):
        probe_agent.run("127.0.0.1", server, [{"op": "jump"}])


def test_a_following_worker_that_never_reports_ends_the_hosts_probe_in_one_line(server: int):
    """Worker 0 waits for worker 1's result only until the plan's last time plus a margin, then
    refuses in one line and still stops the server (the fixture's QUIT then finds it gone or going)."""
    import time

    from tracetool.errors import ToolError
    from tracetool.measure.network_probe import _HostsProbeCluster

    hosts = _HostsProbeCluster("127.0.0.1", server, workers=2)
    hosts.report_margin_s = 0.5
    started = time.monotonic()
    with pytest.raises(ToolError, match="worker 1 did not report within 0 s; run 'tracetool probe") as caught:
        hosts.run({0: [{"op": "ping", "count": 1}], 1: [{"op": "ping", "count": 1}]})
    assert "\n" not in str(caught.value)
    assert time.monotonic() - started < 5
    hosts.link.put("left", "for the fixture")  # the fresh connection works
    hosts.link.close()
