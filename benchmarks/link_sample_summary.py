"""One line per sampled run: how each direction of the PS link was used over the measurement window.

Reads ``RUN.jsonl`` (or ``.jsonl.gz``) of ``benchmarks/link_sampler.py`` with ``RUN.log``, the
``tracetool measure`` output of the same run beside it, whose "measuring from HH:MM:SS for S s"
line gives the window (UTC, the day the samples were taken). Per direction: utilisation (bytes
over the line rate), the share of samples in which it idled, drops and the queue's median and
90th percentile in ms at the line rate; per host, the TCP counters' growth over the window
(timeouts, tail-loss probes, fast retransmits, retransmitted segments); per download socket,
the median congestion window and RTT. Prints figures; not a test:

    python benchmarks/link_sample_summary.py --bandwidth 25mbit RUN.jsonl.gz [RUN ...]
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.cluster.topology import parse_bandwidth_bps  # noqa: E402


def read_samples(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def run_window(log: str, day: datetime.date) -> tuple[float, float] | None:
    found = re.search(r"measuring from (\d+):(\d+):(\d+) for (\d+) s", log)
    if not found:
        return None
    hour, minute, second, seconds = (int(g) for g in found.groups())
    start = datetime.datetime(day.year, day.month, day.day, hour, minute, second,
                              tzinfo=datetime.timezone.utc).timestamp()
    return start, start + seconds


def direction_summary(rows: list[dict[str, Any]], direction: str, rate_bytes: float) -> str:
    sent = np.array([r[direction]["bytes"] for r in rows], float)
    times = np.array([r["t"] for r in rows])
    utilisation = np.diff(sent) / np.diff(times) / rate_bytes
    queue_ms = np.array([r[direction]["backlog"] for r in rows]) / rate_bytes * 1000
    drops = rows[-1][direction]["drops"] - rows[0][direction]["drops"]
    return (f"{direction}: used {np.mean(utilisation):.2f}, idle {np.mean(utilisation < 0.1):.2f}, drops {drops}, "
            f"queue {np.median(queue_ms):.0f}/{np.percentile(queue_ms, 90):.0f} ms")


def counter_summary(rows: list[dict[str, Any]]) -> list[str]:
    counted = [r["netstat"] for r in rows if "netstat" in r]
    if len(counted) < 2:
        return []
    parts = []
    for host in counted[0]:
        first, last = counted[0][host], counted[-1][host]
        grew = {name.split(".")[1]: last[name] - first[name] for name in first}
        parts.append(f"{host}: RTO {grew['TCPTimeouts']} TLP {grew['TCPLossProbes']} "
                     f"FR {grew['TCPFastRetrans']} rtx {grew['RetransSegs']}")
    return parts


def socket_summary(rows: list[dict[str, Any]]) -> list[str]:
    """Download sockets: the PS's server end (port 2222) towards each worker."""
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        for socket in row["sockets"]:
            if socket["local"].endswith(":2222") and "cwnd" in socket:
                worker = socket["peer"].rsplit(":", 1)[0].rsplit(".", 1)[-1].rstrip("]")
                by_worker.setdefault(worker, []).append((float(socket["cwnd"]), float(socket["rtt"].split("/")[0])))
    parts = []
    for worker, values in sorted(by_worker.items()):
        array = np.array(values)
        parts.append(f"down to .{worker}: cwnd {np.median(array[:, 0]):.0f}, rtt {np.median(array[:, 1]):.0f} ms")
    return parts


def summarise(path: Path, rate_bytes: float) -> str | None:
    name = path.name.removesuffix(".gz").removesuffix(".jsonl")
    log_path = path.with_name(name + ".log")
    if not log_path.exists():
        return f"{name}: no {log_path.name} beside it"
    log = log_path.read_text()
    rows = [r for r in read_samples(path) if r.get("down") and r.get("up")]
    if not rows:
        return f"{name}: no samples"
    day = datetime.datetime.fromtimestamp(rows[0]["t"], datetime.timezone.utc).date()
    window = run_window(log, day)
    rate = re.search(r"worker\(s\): ([0-9.]+) steps/s", log)
    if window is None or rate is None:
        return f"{name}: {log_path.name} has no finished measurement"
    rows = [r for r in rows if window[0] <= r["t"] <= window[1]]
    if len(rows) < 10:
        return f"{name}: under 10 samples in the window"
    parts = [f"{name}: {float(rate[1]):.2f} steps/s", direction_summary(rows, "down", rate_bytes),
             direction_summary(rows, "up", rate_bytes), *counter_summary(rows), *socket_summary(rows)]
    return " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--bandwidth", required=True, help="the shaped link's rate, e.g. 25mbit")
    args = parser.parse_args()
    rate_bytes = parse_bandwidth_bps(args.bandwidth) / 8
    for path in args.runs:
        print(summarise(path, rate_bytes))


if __name__ == "__main__":
    main()
