"""Sample a running shaped cluster's PS link: both qdiscs, the PS's TCP sockets and the kernels' loss counters.

A run's steps/s says how fast it went, not why a run of the same workload went slower: whether
the link idled, which direction dropped, whether losses ended in a timeout or a fast retransmit.
This script watches the cluster ``tracetool measure`` (or ``validate``) builds, from outside
and without touching it: every PERIOD it reads the two ``tbf`` qdiscs (downloads on the PS's
veth, uploads on the bridge port towards the PS) and ``ss -ti`` in the PS's namespace, and every
tenth sample the TCP counters of ``/proc/net/netstat`` in the PS's and the first two workers'
namespaces. One JSON line per sample; ``benchmarks/link_sample_summary.py`` reads them over a
run's measurement window. Each sample forks three processes (about 11 ms of CPU): at 10 Hz the
sampler costs about 0.15 of a core, so compare runs sampled alike, never a sampled run with an
unsampled one.

    python benchmarks/link_sampler.py OUT.jsonl SECONDS [--period 0.1]

It waits for the namespaces of a cluster (``tfsim-<pid>-ps`` and ``-br``) to appear, and stops
after SECONDS or when they go away. Run one cluster at a time: it samples the first it finds.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.cluster.netns import command_in_namespace  # noqa: E402
from tracetool.cluster.topology import run_tc  # noqa: E402

QDISC_FIELDS = ("bytes", "packets", "drops", "overlimits", "backlog", "qlen")
SOCKET_FIELDS = re.compile(r"\b(cwnd|rtt|rto|retrans|lost|bytes_acked|bytes_received|unacked|ssthresh|"
                           r"delivered|busy|rwnd_limited|sndbuf_limited|notsent|dsack_dups|bytes_retrans|"
                           r"segs_out|segs_in|data_segs_out)[: ]([^ ]+)")
NETSTAT_COUNTERS = {"TCPTimeouts", "TCPLossProbes", "TCPLossProbeRecovery", "TCPFastRetrans",
                    "TCPSlowStartRetrans", "TCPLostRetransmit", "TCPSpuriousRTOs", "TCPSackRecovery",
                    "RetransSegs", "OutSegs", "InSegs", "TCPDSACKRecv", "DelayedACKs", "TCPDelivered"}
NETSTAT_EVERY = 10


def cluster_namespaces() -> tuple[str, str] | None:
    """The PS's and the bridge's namespace of the running cluster, if one runs."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    ps = [n for n in names if re.fullmatch(r"tfsim-\d+-ps", n)]
    bridge = [n for n in names if re.fullmatch(r"tfsim-\d+-br", n)]
    return (ps[0], bridge[0]) if ps and bridge else None


def in_namespace(namespace: str, argv: list[str]) -> str:
    return subprocess.run(command_in_namespace(namespace, argv), capture_output=True, text=True).stdout


def tbf_counters(namespace: str, device: str) -> dict[str, Any] | None:
    for qdisc in json.loads(run_tc(namespace, "-s", "-j", "qdisc", "show", "dev", device, check=False) or "[]"):
        if qdisc.get("kind") == "tbf":
            return {key: qdisc.get(key) for key in QDISC_FIELDS}
    return None


def tcp_sockets(namespace: str) -> list[dict[str, Any]]:
    """``ss -ti``'s established sockets: a header line, then an info line, per socket."""
    lines = in_namespace(namespace, ["ss", "-tinH", "state", "established"]).splitlines()
    sockets = []
    for header, info in zip(lines[0::2], lines[1::2], strict=False):
        recv_q, send_q, local, peer = header.split()[:4]
        sockets.append({"local": local, "peer": peer, "sendq": int(send_q), "recvq": int(recv_q),
                        **dict(SOCKET_FIELDS.findall(info))})
    return sockets


def tcp_counters(namespace: str) -> dict[str, int]:
    """The namespace's own TCP counters (``/proc/net`` is per network namespace)."""
    lines = in_namespace(namespace, ["cat", "/proc/net/netstat", "/proc/net/snmp"]).splitlines()
    counters = {}
    for names, values in zip(lines[0::2], lines[1::2], strict=False):
        prefix = names.split(":")[0]
        for name, value in zip(names.split()[1:], values.split()[1:], strict=True):
            if name in NETSTAT_COUNTERS:
                counters[f"{prefix}.{name}"] = int(value)
    return counters


def sample(ps: str, bridge: str, with_counters: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"t": time.time(), "down": tbf_counters(ps, "eth0"), "up": tbf_counters(bridge, "vps"),
                           "sockets": tcp_sockets(ps)}
    if with_counters:
        base = ps[: -len("ps")]
        row["netstat"] = {host: tcp_counters(base + host) for host in ("ps", "w0", "w1")}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--period", type=float, default=0.1)
    args = parser.parse_args()
    deadline = time.time() + args.seconds
    found = None
    while found is None and time.time() < deadline:
        found = cluster_namespaces()
        if found is None:
            time.sleep(0.5)
    if found is None:
        return
    ps, bridge = found
    temporary = args.out.with_name(args.out.name + ".partial")
    with temporary.open("w") as out:
        count = 0
        while time.time() < deadline:
            started = time.time()
            row = sample(ps, bridge, count % NETSTAT_EVERY == 0)
            if row["down"] is None:  # the cluster is gone
                break
            out.write(json.dumps(row) + "\n")
            count += 1
            time.sleep(max(0.0, args.period - (time.time() - started)))
    temporary.replace(args.out)


if __name__ == "__main__":
    main()
