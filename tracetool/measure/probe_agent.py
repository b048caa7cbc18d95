"""The network probe's two ends: a PS-side server and a worker-side client, plain TCP, no TensorFlow.

    python -m tracetool.measure.probe_agent serve PORT
    python -m tracetool.measure.probe_agent run ADDRESS PORT PLAN_JSON

The server answers each connection's requests in its own thread: ``D n`` sends n bytes (a
parameter download), ``U n`` reads n bytes and acknowledges them with one byte (a gradient
upload and its applied update), ``V n`` reads n bytes too and answers with the segment count as
they came (``bulk_rate``), ``P`` answers one byte (a round trip), ``T`` its monotonic
clock. ``PUT key n`` + n bytes and ``GET key`` make it a mailbox through which the hosts of a
real cluster pass plans and results; ``QUIT`` ends it.

The client keeps one connection, as a TensorFlow worker keeps one gRPC channel, runs its plan's
actions in order (a download, an upload, pings, or training steps for a while), each at its
``at`` time when given, and returns what it saw. Times in plans
and results are on the *server's* clock: the client estimates its offset from the round trip of
``T`` requests (the one with the shortest round trip, as NTP does), so clients on different
hosts line up their actions. Stdlib only: it starts in a blink.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
import time
from typing import Any

from tracetool.cluster.parent_death import die_with_parent
from tracetool.measure.transports import DEFAULT_TRANSPORT

CHUNK = 1 << 20


class _Mailbox:
    """What the hosts of a real cluster leave for each other on the PS: plans, results, the end."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}
        self.changed = threading.Condition()
        self.quit = threading.Event()

    def put(self, key: str, value: bytes) -> None:
        with self.changed:
            self.items[key] = value
            self.changed.notify_all()

    def get(self, key: str) -> bytes:
        with self.changed:
            self.changed.wait_for(lambda: key in self.items)
            return self.items.pop(key)


def _serve_connection(conn: socket.socket, mailbox: _Mailbox) -> None:
    blob = b"p" * CHUNK
    reader = conn.makefile("rb")
    try:
        while True:
            line = reader.readline()
            if not line:
                return
            command, _, size = line.decode().strip().partition(" ")
            if command == "P":
                conn.sendall(b"p")
            elif command == "T":
                conn.sendall(f"{time.monotonic():.9f}\n".encode())
            elif command == "PUT":
                key, length = size.split()
                mailbox.put(key, reader.read(int(length)))
                conn.sendall(b"k")
            elif command == "GET":
                value = mailbox.get(size)
                conn.sendall(f"{len(value)}\n".encode() + value)
            elif command == "QUIT":
                mailbox.quit.set()
                conn.sendall(b"k")
            elif command == "D":
                left = int(size)
                while left > 0:
                    sent = min(left, CHUNK)
                    conn.sendall(blob[:sent])
                    left -= sent
            elif command in ("U", "V"):
                segments = _SegmentClock(conn) if command == "V" else None
                if not _receive(reader, int(size), segments):
                    return
                if segments is None:
                    conn.sendall(b"k")
                else:
                    reply = json.dumps(segments.report()).encode()
                    conn.sendall(f"k{len(reply)}\n".encode() + reply)
    except OSError:
        return


def _receive(reader: Any, size: int, segments: _SegmentClock | None) -> bool:
    """Read an upload's ``size`` bytes (False if the peer left), reading the segment count as it goes."""
    left = size
    while left > 0:
        data = reader.read1(min(left, CHUNK))
        if not data:
            return False
        left -= len(data)
        if segments is not None:
            segments.tick()
    return True


class _SegmentClock:
    """The data segments a socket has received so far, as the kernel counts them (TCP_INFO's
    ``tcpi_data_segs_in``), read every few milliseconds of a bulk transfer (``bulk_rate``). The
    kernel counts a segment as it arrives, out of order or not, whether or not the program is
    reading then; each reading is bracketed by the clock before and after it."""

    every_s = 0.002

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.first = _data_segments_in(conn)
        self.samples: list[list[float]] = []
        self.last = float("-inf")

    def tick(self) -> None:
        if self.first is not None and time.monotonic() - self.last >= self.every_s:
            self.sample()

    def sample(self) -> None:
        before = time.monotonic()
        segments = _data_segments_in(self.conn)
        self.last = time.monotonic()
        self.samples.append([before, self.last, segments])

    def report(self) -> dict[str, Any]:
        """The readings, and the segments the whole transfer took (to turn segments into bytes)."""
        if self.first is None:
            return {"segments": [], "transfer_segments": 0}
        self.sample()
        return {"segments": self.samples, "transfer_segments": self.samples[-1][2] - self.first}


TCP_INFO_DATA_SEGS_IN = 152  # offset of tcpi_data_segs_in in struct tcp_info (Linux 4.6 and later)


def _data_segments_in(conn: socket.socket) -> int | None:
    info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) < TCP_INFO_DATA_SEGS_IN + 4:
        return None
    return int.from_bytes(info[TCP_INFO_DATA_SEGS_IN:TCP_INFO_DATA_SEGS_IN + 4], sys.byteorder)


def serve(port: int, address: str = "0.0.0.0") -> None:
    """Serve until a client sends ``QUIT``; the reference steps' gRPC transfers on the next port
    too, where gRPC is installed (``grpc_probe_code``)."""
    transfers = _grpc_server(port + 1, address)
    try:
        _serve_tcp(port, address)
    finally:
        if transfers is not None:
            transfers.stop(0)


def _grpc_server(port: int, address: str) -> Any:
    if importlib.util.find_spec("grpc") is None:  # found, not imported: serve quiets gRPC's log first
        return None
    from tracetool.measure import grpc_probe_code

    return grpc_probe_code.serve(port, address)


def _serve_tcp(port: int, address: str) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen()
    server.settimeout(0.5)
    mailbox = _Mailbox()
    while not mailbox.quit.is_set():
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_connection, args=(conn, mailbox), daemon=True).start()
    server.close()


class ServerLink:
    """A client's connection to the probe server, with the offset of the server's clock."""

    def __init__(self, address: str, port: int, timeout_s: float = 10.0) -> None:
        self.conn = _connect(address, port, timeout_s)
        self.reader = self.conn.makefile("rb")
        self.offset_s = self._clock_offset()

    def _clock_offset(self, samples: int = 15) -> float:
        """Server clock minus this host's, from the request with the shortest round trip."""
        best = None
        for _ in range(samples):
            sent = time.monotonic()
            self.conn.sendall(b"T\n")
            server = float(self.reader.readline())
            back = time.monotonic()
            if best is None or back - sent < best[0]:
                best = (back - sent, server - (sent + back) / 2)
        assert best is not None
        return best[1]

    def now(self) -> float:
        """The server's clock, read here."""
        return time.monotonic() + self.offset_s

    def put(self, key: str, value: str) -> None:
        data = value.encode()
        self.conn.sendall(f"PUT {key} {len(data)}\n".encode() + data)
        if self.conn.recv(1) != b"k":
            raise ConnectionError("the probe server did not store a message")

    def get(self, key: str, timeout_s: float | None = None) -> str:
        """The value at ``key`` once some host has put it; ``TimeoutError`` after ``timeout_s``
        (the connection is then unusable: the server still owes the answer)."""
        self.conn.sendall(f"GET {key}\n".encode())
        self.conn.settimeout(timeout_s)
        try:
            length = int(self.reader.readline())
            return self.reader.read(length).decode()
        except OSError as exc:  # a socket timeout is an OSError
            raise TimeoutError(f"no {key} within {timeout_s:g} s") from exc
        finally:
            self.conn.settimeout(None)

    def quit(self) -> None:
        self.conn.sendall(b"QUIT\n")
        self.conn.recv(1)

    def close(self) -> None:
        self.reader.close()
        self.conn.close()


def _connect(address: str, port: int, timeout_s: float = 10.0) -> socket.socket:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = socket.create_connection((address, port), timeout=10)
            conn.settimeout(None)  # a mailbox GET waits as long as the other host's phase lasts
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _download(conn: socket.socket, size: int, timeline: bool = False) -> dict[str, Any]:
    """A download's start, first byte and end; with ``timeline`` the segment count as it arrived
    (``_SegmentClock``, on this host's clock)."""
    segments = _SegmentClock(conn) if timeline else None
    start = time.monotonic()
    conn.sendall(f"D {size}\n".encode())
    got, first = 0, None
    while got < size:
        data = conn.recv(min(CHUNK, size - got))
        if not data:
            raise ConnectionError("the probe server closed the connection")
        first = first or time.monotonic()
        got += len(data)
        if segments is not None:
            segments.tick()
    counted = segments.report() if segments is not None else {}  # its last reading before the end
    return {"start": start, "first": first or start, "end": time.monotonic(), **counted}


def _upload(conn: socket.socket, size: int, timeline: bool = False) -> dict[str, Any]:
    """An upload's start and acknowledgement; with ``timeline`` the segment count as the server
    received them (``_SegmentClock``, on the server's clock)."""
    blob = b"u" * min(size, CHUNK)
    start = time.monotonic()
    conn.sendall(f"{'V' if timeline else 'U'} {size}\n".encode())
    left = size
    while left > 0:
        sent = min(left, len(blob))
        conn.sendall(blob[:sent])
        left -= sent
    if conn.recv(1) != b"k":
        raise ConnectionError("the probe server did not acknowledge an upload")
    result: dict[str, Any] = {"start": start, "end": time.monotonic()}
    if timeline:
        received = json.loads(_receive_exactly(conn, int(_receive_line(conn))))
        result.update(server_segments=received["segments"], transfer_segments=received["transfer_segments"])
    return result


def _receive_line(conn: socket.socket) -> bytes:
    """One line, byte by byte: nothing follows it on the connection until the next request."""
    line = b""
    while not line.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            raise ConnectionError("the probe server closed the connection")
        line += byte
    return line


def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    parts, left = [], size
    while left > 0:
        data = conn.recv(min(left, CHUNK))
        if not data:
            raise ConnectionError("the probe server closed the connection")
        parts.append(data)
        left -= len(data)
    return b"".join(parts)


def _pings(conn: socket.socket, count: int, interval_s: float, until: float | None = None) -> dict[str, list[float]]:
    """``count`` round trips ``interval_s`` apart, or fewer if ``until`` (this host's clock) comes
    first: behind a filling queue each takes as long as the queue, so a count alone cannot say
    how long pings cover."""
    rtts, times = [], []
    for _ in range(count):
        start = time.monotonic()  # the time checked is the time recorded: no ping starts after ``until``
        if until is not None and start >= until:
            break
        conn.sendall(b"P\n")
        if conn.recv(1) != b"p":
            raise ConnectionError("the probe server did not answer a ping")
        rtts.append(time.monotonic() - start)
        times.append(start)
        time.sleep(interval_s)
    return {"rtts": rtts, "times": times}


def _steps(conn: socket.socket, action: dict[str, Any], offset_s: float) -> dict[str, list[list[float]]]:
    """Training steps until ``until``: download, compute (a sleep), upload and its acknowledgement,
    as ``link_probe``'s workers step on the emulated link; the spans (request, download done,
    upload start, upload acknowledged) of the steps begun after ``warm_until``, on this host's clock.
    With ``"transport": "grpc"`` the steps' bytes go as gRPC calls to the server's next port."""
    download, upload, compute_s = int(action["download"]), int(action["upload"]), float(action["compute"])
    warm_until, until = float(action["warm_until"]) - offset_s, float(action["until"]) - offset_s
    if action.get("transport", DEFAULT_TRANSPORT) == "grpc":
        from tracetool.measure import grpc_probe_code

        address, port = conn.getpeername()[:2]
        return {"spans": grpc_probe_code.steps(address, port + 1, grpc_probe_code.split_bytes(download),
                                               grpc_probe_code.split_bytes(upload), compute_s, warm_until, until)}
    spans = []
    while time.monotonic() < until:
        down = _download(conn, download)
        time.sleep(compute_s)
        up = _upload(conn, upload)
        if down["start"] >= warm_until:
            spans.append([down["start"], down["end"], up["start"], up["end"]])
    return {"spans": spans}


def run(address: str, port: int, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run a plan whose ``at`` times are on the server's clock; report times on that clock too."""
    link = ServerLink(address, port)
    try:
        return _run_plan(link, plan)
    finally:
        link.close()


def _run_plan(link: ServerLink, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    conn, offset = link.conn, link.offset_s
    results: list[dict[str, Any]] = []
    for action in plan:
        at = action.get("at")
        if action["op"] == "steps" and action.get("transport", DEFAULT_TRANSPORT) == "grpc":
            import grpc  # noqa: F401  # imported before the start time: on a busy host it takes seconds
        if at is not None:
            time.sleep(max(0.0, at - offset - time.monotonic()))
        op = action["op"]
        if op == "down":
            results.append(_download(conn, int(action["bytes"]), bool(action.get("timeline"))))
        elif op == "up":
            results.append(_upload(conn, int(action["bytes"]), bool(action.get("timeline"))))
        elif op == "ping":
            until = action.get("until")
            results.append(_pings(conn, int(action["count"]), float(action.get("interval", 0.02)),
                                  None if until is None else float(until) - offset))
        elif op == "steps":
            results.append(_steps(conn, action, offset))
        else:
            raise ValueError(f"unknown probe action {op!r}")
    for result in results:
        for key in ("start", "first", "end"):
            if key in result:
                result[key] += offset
        if "times" in result:
            result["times"] = [t + offset for t in result["times"]]
        if "segments" in result:
            result["segments"] = [[before + offset, after + offset, count]
                                  for before, after, count in result["segments"]]
        if "server_segments" in result:  # already on the server's clock
            result["segments"] = result.pop("server_segments")
        if "spans" in result:
            result["spans"] = [[t + offset for t in span] for span in result["spans"]]
    return results


def follow_plans(address: str, port: int, task_index: int) -> None:
    """A worker host of a real cluster: run each plan the orchestrating worker leaves for this
    task on the server, and leave the results there, until the plan is ``stop``."""
    link = ServerLink(address, port, timeout_s=600.0)
    try:
        sequence = 0
        while True:
            plan = json.loads(link.get(f"plan-{sequence}-{task_index}"))
            if plan == "stop":
                return
            link.offset_s = link._clock_offset()
            link.put(f"result-{sequence}-{task_index}", json.dumps(_run_plan(link, plan)))
            sequence += 1
    finally:
        link.close()


def main(argv: list[str]) -> None:
    die_with_parent()
    if argv[0] == "serve":
        serve(int(argv[1]))
    else:
        print(json.dumps(run(argv[1], int(argv[2]), json.loads(argv[3]))))


if __name__ == "__main__":
    main(sys.argv[1:])
