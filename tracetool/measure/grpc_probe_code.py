"""The link probe's programs over gRPC: TensorFlow's transport, without TensorFlow.

Why: TensorFlow moves every tensor as its own gRPC call (HTTP/2 streams multiplexed on one
connection per pair of tasks, each under HTTP/2 flow control). Behind a deep buffer with CUBIC,
two workers of the raw-TCP probe (one ``sendall`` of the step's bytes each way) settle into a
regime TensorFlow's do not: resnet's step at 50mbit behind 100 ms reached 8.0 steps/s after
16 s (perfect turns), where TensorFlow held about 6.0 and this probe 5.7 over the same 40 s
(docs/network-probe.md, "gRPC transfers"). The programs keep the raw probe's interface: the PS
serves downloads and acknowledges uploads; each worker prints its steps' (request, download
done, upload start, upload acknowledged) on the shared monotonic clock.

A step's bytes each way are split into tensors (the model's own sizes where known); all of a
step's tensors of one direction are in flight at once, as TensorFlow's RecvTensor calls are.
"""

from __future__ import annotations

# The PS: ``/probe/Download`` answers an 8-byte size with that many bytes, ``/probe/Upload``
# acknowledges what it received with one byte. Arguments: port.
PS_CODE = """
import struct, sys, time
from concurrent import futures
import grpc
port = int(sys.argv[1])
OPTIONS = [('grpc.max_send_message_length', -1), ('grpc.max_receive_message_length', -1)]
def download(request, context):
    return b'p' * struct.unpack('<q', request)[0]
def upload(request, context):
    return b'k'
handler = grpc.method_handlers_generic_handler('probe', {
    'Download': grpc.unary_unary_rpc_method_handler(download),
    'Upload': grpc.unary_unary_rpc_method_handler(upload)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), options=OPTIONS)
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port(f'0.0.0.0:{port}')
server.start()
time.sleep(10 ** 6)
"""

# A worker: steps until the deadline over one channel to the PS. Arguments: PS address,
# download tensor sizes and upload tensor sizes (comma-separated), window s, warm-up s, port,
# compute s (a sleep: it leaves the CPU free).
WORKER_CODE = """
import struct, sys, time
import grpc
address, downloads, uploads = sys.argv[1], sys.argv[2], sys.argv[3]
duration, warm, port, compute = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
OPTIONS = [('grpc.max_send_message_length', -1), ('grpc.max_receive_message_length', -1)]
requests = [struct.pack('<q', int(size)) for size in downloads.split(',')]
blobs = [b'g' * int(size) for size in uploads.split(',')]
channel = grpc.insecure_channel(f'{address}:{port}', options=OPTIONS)
grpc.channel_ready_future(channel).result(timeout=30)
download = channel.unary_unary('/probe/Download')
upload = channel.unary_unary('/probe/Upload')
spans = []
begin = time.monotonic()
while time.monotonic() < begin + warm + duration:
    a = time.monotonic()
    for call in [download.future(request) for request in requests]:
        call.result()
    b = time.monotonic()
    if compute > 0:
        time.sleep(compute)
    b2 = time.monotonic()
    for call in [upload.future(blob) for blob in blobs]:
        call.result()
    c = time.monotonic()
    if a >= begin + warm:
        spans.append((a, b, b2, c))
channel.close()
print(repr(spans))
"""

TENSORS_PER_STEP = 8  # a reference step's bytes each way, split alike: the zoo's steps move 10 to 160 tensors


def split_bytes(total: int, parts: int = TENSORS_PER_STEP) -> list[int]:
    """``total`` bytes as ``parts`` tensors of (nearly) equal size, none empty."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]
