"""The backlog sampler reads a shaped qdisc's queue over rtnetlink as it fills and drains."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import needs_root
from tracetool.cluster.qdisc_backlog import BacklogSampler
from tracetool.cluster.topology import QueueSize, ShapedTopology
from tracetool.errors import ToolError

_SINK = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 5002)); s.listen()
c, _ = s.accept()
while c.recv(1 << 20):
    pass
"""

_SOURCE = """
import socket, sys, time
for _ in range(50):
    try:
        s = socket.create_connection((sys.argv[1], 5002)); break
    except OSError:
        time.sleep(0.1)
s.sendall(b'x' * int(sys.argv[2])); s.close()
"""


@pytest.mark.cluster
@needs_root
def test_a_bulk_upload_fills_the_deep_queue_and_it_drains_after():
    """Behind a 100 ms buffer a CUBIC bulk upload of 1.5 s queues most of the buffer; the samples
    see it stand there while the upload runs and empty once it is done."""
    bandwidth = 20e6
    queue = QueueSize(ms=100.0)
    with ShapedTopology(workers=1, bandwidth_bps=bandwidth, queue=queue) as topology:
        sink = subprocess.Popen(topology.command_in("ps", 0, [sys.executable, "-c", _SINK]))
        try:
            time.sleep(0.3)
            with BacklogSampler(topology.bridge_namespace, "vps", 0.002) as sampler:
                started = time.time()
                subprocess.run(topology.command_in("worker", 0, [sys.executable, "-c", _SOURCE,
                                                                 topology.ps.address, str(int(bandwidth / 8 * 1.5))]),
                               check=True, timeout=30)
                time.sleep(0.5)
        finally:
            sink.kill()
            sink.wait()
    samples = sampler.samples
    assert sampler.error is None
    assert len(samples.unix_s) > 300  # about 2 s at 2 ms
    limit = queue.limit_bytes(bandwidth)
    during = [b for t, b in zip(samples.unix_s, samples.backlog_bytes, strict=True) if started + 0.5 <= t]
    assert max(during) >= 0.5 * limit, (max(during), limit)
    assert samples.backlog_bytes[-1] == 0  # drained once the upload ended
    assert samples.packets[-1] > samples.packets[0]


@needs_root
def test_a_missing_namespace_or_device_is_refused_in_one_line():
    """No namespace, no such device, or an interval it cannot keep: a ToolError naming it."""
    with pytest.raises(ToolError, match="does not exist"):
        BacklogSampler("tfsim-no-such-namespace", "eth0").__enter__()
    with ShapedTopology(workers=1, bandwidth_bps=20e6) as topology:
        with pytest.raises(ToolError, match="no device 'nope'"):
            BacklogSampler(topology.bridge_namespace, "nope").__enter__()
    with pytest.raises(ToolError, match="interval"):
        BacklogSampler("any", "eth0", interval_s=0.0)
