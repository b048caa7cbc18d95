"""The link probe's transfers over gRPC: TensorFlow's transport, without TensorFlow.

Why: TensorFlow moves every tensor as its own gRPC call (HTTP/2 streams multiplexed on one
connection per pair of tasks, each under HTTP/2 flow control). Behind a deep buffer with CUBIC,
two workers of the raw-TCP probe (one ``sendall`` of the step's bytes each way) settle into a
regime TensorFlow's do not: resnet's step at 50mbit behind 100 ms reached 8.0 steps/s after
16 s (perfect turns), where TensorFlow held about 6.0 and this probe 5.75 over the same 40 s
(docs/network-probe.md, "Slow starts and gRPC transfers"). The steps keep the raw probe's
record: each step's (request, download done, upload start, upload acknowledged) on the
stepping host's monotonic clock.

A step's bytes each way are split into tensors; all of a step's tensors of one direction are
in flight at once, as TensorFlow's RecvTensor calls are. ``serve`` runs beside the probe agent's
TCP server on real hosts (the next port) and alone in the emulated link's PS namespace.
"""

from __future__ import annotations

import errno
import os
import struct
import time
from concurrent import futures
from typing import Any

TENSORS_PER_STEP = 8  # a step's bytes each way, split alike: the zoo's steps move 10 to 160 tensors
OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
SERVICE = "probe"


def split_bytes(total: int, parts: int = TENSORS_PER_STEP) -> list[int]:
    """``total`` bytes as ``parts`` tensors of (nearly) equal size, none empty."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def serve(port: int, address: str = "0.0.0.0") -> Any:
    """A started gRPC server: ``Download`` answers an 8-byte size with that many bytes, ``Upload``
    acknowledges what it received with one byte. The caller stops it (``server.stop(0)``).

    gRPC's own log stays quiet (where gRPC is not loaded yet): a failed bind is the caller's
    one-line error, not a C++ log line besides it."""
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    import grpc

    def download(request: bytes, context: Any) -> bytes:
        return b"p" * struct.unpack("<q", request)[0]

    def upload(request: bytes, context: Any) -> bytes:
        return b"k"

    handler = grpc.method_handlers_generic_handler(SERVICE, {
        "Download": grpc.unary_unary_rpc_method_handler(download),
        "Upload": grpc.unary_unary_rpc_method_handler(upload)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), options=OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    try:  # older gRPC returns 0 on a failed bind, newer raises RuntimeError
        bound = server.add_insecure_port(f"{address}:{port}")
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(errno.EADDRINUSE, f"port {port}, the next one, is taken (the probe's gRPC transfers "
                      "listen there); give the PS a port whose next one is free")
    server.start()
    return server


def steps(address: str, port: int, downloads: list[int], uploads: list[int], compute_s: float,
          warm_until: float, until: float) -> list[list[float]]:
    """Training steps over one channel until ``until`` (this host's monotonic clock): the
    download's tensors, compute (a sleep: it leaves the CPU free), the upload's tensors; the
    spans of the steps begun after ``warm_until``."""
    import grpc

    requests = [struct.pack("<q", size) for size in downloads]
    blobs = [b"g" * size for size in uploads]
    with grpc.insecure_channel(f"{address}:{port}", options=OPTIONS) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        download = channel.unary_unary(f"/{SERVICE}/Download")
        upload = channel.unary_unary(f"/{SERVICE}/Upload")
        spans = []
        while time.monotonic() < until:
            start = time.monotonic()
            for call in [download.future(request) for request in requests]:
                call.result()
            downloaded = time.monotonic()
            if compute_s > 0:
                time.sleep(compute_s)
            upload_start = time.monotonic()
            for call in [upload.future(blob) for blob in blobs]:
                call.result()
            if start >= warm_until:
                spans.append([start, downloaded, upload_start, time.monotonic()])
    return spans


# The emulated link's programs (``link_probe``), run with ``python -c`` in the tasks' namespaces.
# The PS, arguments: port.
PS_CODE = """
import sys, time
from tracetool.measure.grpc_probe_code import serve
server = serve(int(sys.argv[1]))  # held: a collected server shuts down
time.sleep(10 ** 6)
"""

# A worker, arguments: PS address, download and upload tensor sizes (comma-separated), window s,
# warm-up s, port, compute s. Prints its steps' spans.
WORKER_CODE = """
import sys, time
from tracetool.measure.grpc_probe_code import steps
address, downloads, uploads = sys.argv[1], sys.argv[2], sys.argv[3]
duration, warm, port, compute = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
begin = time.monotonic()
print(repr([tuple(span) for span in steps(address, port, [int(x) for x in downloads.split(',')],
                                          [int(x) for x in uploads.split(',')], compute, begin + warm,
                                          begin + warm + duration)]))
"""
