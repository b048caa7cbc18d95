"""The network probe's two ends: a PS-side server and a worker-side client, plain TCP, no TensorFlow.

    python -m tracetool.measure.probe_agent serve PORT
    python -m tracetool.measure.probe_agent run ADDRESS PORT PLAN_JSON

The server answers each connection's requests in its own thread: ``D n`` sends n bytes (a
parameter download), ``U n`` reads n bytes and acknowledges them with one byte (a gradient
upload and its applied update), ``P`` answers one byte (a round trip). The client keeps one
connection, as a TensorFlow worker keeps one gRPC channel, runs its plan's actions in order,
each at its ``at`` time on the monotonic clock when given (namespaces share the clock, so two
clients' actions line up), and prints what it saw as JSON. Stdlib only: it starts in a blink.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

from tracetool.cluster.parent_death import die_with_parent

CHUNK = 1 << 20


def _serve_connection(conn: socket.socket) -> None:
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
            elif command == "D":
                left = int(size)
                while left > 0:
                    sent = min(left, CHUNK)
                    conn.sendall(blob[:sent])
                    left -= sent
            elif command == "U":
                left = int(size)
                while left > 0:
                    data = reader.read1(min(left, CHUNK))
                    if not data:
                        return
                    left -= len(data)
                conn.sendall(b"k")
    except OSError:
        return


def serve(port: int) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen()
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_connection, args=(conn,), daemon=True).start()


def _connect(address: str, port: int, timeout_s: float = 10.0) -> socket.socket:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = socket.create_connection((address, port), timeout=60)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _download(conn: socket.socket, size: int) -> dict[str, float]:
    start = time.monotonic()
    conn.sendall(f"D {size}\n".encode())
    got, first = 0, None
    while got < size:
        data = conn.recv(min(CHUNK, size - got))
        if not data:
            raise ConnectionError("the probe server closed the connection")
        first = first or time.monotonic()
        got += len(data)
    return {"start": start, "first": first or start, "end": time.monotonic()}


def _upload(conn: socket.socket, size: int) -> dict[str, float]:
    blob = b"u" * min(size, CHUNK)
    start = time.monotonic()
    conn.sendall(f"U {size}\n".encode())
    left = size
    while left > 0:
        sent = min(left, len(blob))
        conn.sendall(blob[:sent])
        left -= sent
    if conn.recv(1) != b"k":
        raise ConnectionError("the probe server did not acknowledge an upload")
    return {"start": start, "end": time.monotonic()}


def _pings(conn: socket.socket, count: int, interval_s: float) -> dict[str, list[float]]:
    rtts, times = [], []
    for _ in range(count):
        start = time.monotonic()
        conn.sendall(b"P\n")
        if conn.recv(1) != b"p":
            raise ConnectionError("the probe server did not answer a ping")
        rtts.append(time.monotonic() - start)
        times.append(start)
        time.sleep(interval_s)
    return {"rtts": rtts, "times": times}


def run(address: str, port: int, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    conn = _connect(address, port)
    results = []
    for action in plan:
        at = action.get("at")
        if at is not None:
            time.sleep(max(0.0, at - time.monotonic()))
        op = action["op"]
        if op == "down":
            results.append(_download(conn, int(action["bytes"])))
        elif op == "up":
            results.append(_upload(conn, int(action["bytes"])))
        elif op == "ping":
            results.append(_pings(conn, int(action["count"]), float(action.get("interval", 0.02))))
        else:
            raise ValueError(f"unknown probe action {op!r}")
    conn.close()
    return results


def main(argv: list[str]) -> None:
    die_with_parent()
    if argv[0] == "serve":
        serve(int(argv[1]))
    else:
        print(json.dumps(run(argv[1], int(argv[2]), json.loads(argv[3]))))


if __name__ == "__main__":
    main(sys.argv[1:])
