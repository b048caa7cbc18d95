"""Sample a shaped qdisc's backlog every few milliseconds while a cluster runs.

Why: behind a deep buffer a worker's requests wait behind the bytes other workers have queued in
the upload direction. The link counters (``ShapedTopology.link_counters``) say how much crossed
in a window, not how deep the queue stood when a step began; the backlog does, and it changes
within a round trip. ``tc -s qdisc show`` forks a process per sample (milliseconds of CPU each on
a two-core machine that is measuring), so this reads the qdisc's statistics over rtnetlink
directly: one socket, opened inside the namespace, polled from a thread.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType

from tracetool.errors import ToolError

_CLONE_NEWNET = 0x40000000
_RTM_NEWQDISC = 36
_RTM_GETQDISC = 38
_NLM_F_REQUEST = 0x1
_NLM_F_DUMP = 0x300
_NLMSG_DONE = 3
_NLMSG_ERROR = 2
_TC_H_ROOT = 0xFFFFFFFF
_TCA_KIND = 1
_TCA_STATS = 3  # struct tc_stats: bytes u64, packets, drops, overlimits, bps, pps, qlen, backlog (u32)
_NLMSG_HEADER = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BxxxiIII")
_RTATTR = struct.Struct("=HH")
_TC_STATS = struct.Struct("=QIIIIIII")


@dataclass
class BacklogSamples:
    """What one sampler saw: ``unix_s`` and the qdisc's ``backlog_bytes`` and ``packets`` then."""

    device: str
    unix_s: list[float] = field(default_factory=list)
    backlog_bytes: list[int] = field(default_factory=list)
    packets: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"device": self.device, "unix_s": [round(t, 6) for t in self.unix_s],
                "backlog_bytes": self.backlog_bytes, "packets": self.packets}


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns failed")


@contextmanager
def _inside(namespace: str) -> Iterator[None]:
    """The calling thread (only it) in ``namespace`` for the block, then back in its own."""
    path = f"/var/run/netns/{namespace}"
    if not os.path.exists(path):
        raise ToolError(f"network namespace '{namespace}' does not exist")
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def open_rtnetlink_in(namespace: str, device: str) -> tuple[socket.socket, int]:
    """An rtnetlink socket bound in ``namespace``, and the index of ``device`` there: a socket
    keeps the namespace it was opened in, so the thread need not stay inside."""
    with _inside(namespace):
        try:
            index = socket.if_nametoindex(device)
        except OSError as exc:
            raise ToolError(f"no device '{device}' in namespace '{namespace}'") from exc
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        sock.bind((0, 0))
    return sock, index


def read_root_stats(sock: socket.socket, ifindex: int, seq: int) -> tuple[int, int] | None:
    """The root qdisc of ``ifindex``: (backlog bytes, packets sent so far), or None without one."""
    request = _TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    header = _NLMSG_HEADER.pack(_NLMSG_HEADER.size + len(request), _RTM_GETQDISC, _NLM_F_REQUEST | _NLM_F_DUMP,
                                seq, 0)
    sock.send(header + request)
    found: tuple[int, int] | None = None
    while True:
        data = sock.recv(65536)
        offset = 0
        while offset + _NLMSG_HEADER.size <= len(data):
            length, kind, _, _, _ = _NLMSG_HEADER.unpack_from(data, offset)
            if length < _NLMSG_HEADER.size:
                return found
            if kind == _NLMSG_DONE:
                return found
            if kind == _NLMSG_ERROR:
                raise OSError("rtnetlink refused the qdisc dump")
            if kind == _RTM_NEWQDISC:
                body = offset + _NLMSG_HEADER.size
                _, index, _, parent, _ = _TCMSG.unpack_from(data, body)
                if index == ifindex and parent == _TC_H_ROOT:
                    found = _stats_in(data, body + _TCMSG.size, offset + length) or found
            offset += (length + 3) & ~3


def _stats_in(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    while start + _RTATTR.size <= end:
        length, kind = _RTATTR.unpack_from(data, start)
        if length < _RTATTR.size:
            return None
        if kind == _TCA_STATS and length - _RTATTR.size >= _TC_STATS.size:
            _, packets, _, _, _, _, _, backlog = _TC_STATS.unpack_from(data, start + _RTATTR.size)
            return backlog, packets
        start += (length + 3) & ~3
    return None


class BacklogSampler:
    """Polls the root qdisc of ``device`` in ``namespace`` every ``interval_s`` in a thread, from
    ``with`` until its end; the samples are in ``samples``.

    A poll costs tens of microseconds, so 2 ms samples take about 1% of a core."""

    def __init__(self, namespace: str, device: str, interval_s: float = 0.002) -> None:
        if not 0.0005 <= interval_s <= 1.0:
            raise ToolError(f"a backlog sample interval must be 0.5 ms to 1 s, got {interval_s * 1e3:g} ms")
        self.namespace = namespace
        self.device = device
        self.interval_s = interval_s
        self.samples = BacklogSamples(device)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._ifindex = 0
        self.error: BaseException | None = None

    def __enter__(self) -> BacklogSampler:
        self._sock, self._ifindex = open_rtnetlink_in(self.namespace, self.device)
        if read_root_stats(self._sock, self._ifindex, 1) is None:
            self._sock.close()
            raise ToolError(f"'{self.device}' in '{self.namespace}' has no root qdisc to sample")
        self._thread = threading.Thread(target=self._poll, name=f"backlog-{self.device}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._sock is not None:
            self._sock.close()

    def _poll(self) -> None:
        assert self._sock is not None
        seq = 2
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                stats = read_root_stats(self._sock, self._ifindex, seq)
                seq += 1
                if stats is not None:
                    self.samples.unix_s.append(time.time())
                    self.samples.backlog_bytes.append(stats[0])
                    self.samples.packets.append(stats[1])
                next_at += self.interval_s
                delay = next_at - time.monotonic()
                if delay > 0:
                    self._stop.wait(delay)
                else:
                    next_at = time.monotonic()
        except OSError as exc:  # the namespace went away under us: keep what was sampled
            self.error = exc
