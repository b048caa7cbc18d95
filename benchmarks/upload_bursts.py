"""Per-step timing of each worker's transfers on the wire, from a packet capture at the PS.

A two-worker run behind a deep buffer settles into one of two regimes (docs/network-probe.md,
"The probe copies the model's schedule"): the workers' downloads alternate with each other's
uploads (fast), or the two download together and upload together (slow). The model lands in
the slow one more often than its twin probe, with more upload drops. This script reads what the
wire carried under each and prints, per run, the figures that tell the regimes apart and show
where a step's time goes:

- how often both workers' downloads (or uploads) are on the line together;
- per step: the download, the wait from the last parameter byte to the first gradient byte,
  the upload, and the wait from the last gradient byte to the next step's first parameter byte
  (the requests' round trip through the upload queue);
- how many upload bytes were sent twice (retransmissions).

The captures are ``CAPTURE=1 benchmarks/interleaved_runs.sh``'s: ``tcpdump -i eth0 -s 96 -w
FILE`` in the PS's namespace (``RUN-ps.pcap``; its eth0 is 10.99.0.1, the workers 10.99.0.11 and up) and in the
first two workers' (``RUN-w0.pcap``, ``RUN-w1.pcap``). At the PS, downloads are timed as they
leave the download queue and uploads as they leave the upload queue: the line's own timing. At a
worker, its uploads are timed before the upload queue: when TensorFlow sent them.

With PS captures only, one table row per run (its rate from ``RUN.json``, measure's file, where
there is one): how many steps download beside the other worker's download, the median step on
the wire, the median wait at worker 0 from its last parameter byte to its first gradient byte
(with ``RUN-w0.pcap``), and the upload bytes sent twice. ``--detail`` prints each capture's
per-worker phases instead. Prints figures; not a test:

    python benchmarks/upload_bursts.py RUN-ps.pcap [RUN2-ps.pcap ...] [--detail] [--gap-ms 20]
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PS_ADDRESS = "10.99.0.1"


@dataclass
class Flow:
    """One direction of the data a worker exchanges with the PS, over all its TCP connections."""

    times: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    retransmitted: list[bool] = field(default_factory=list)


def read_pcap(path: Path) -> dict[tuple[str, str], Flow]:
    """(worker address, "down" or "up") -> the flow's data packets, from a classic pcap file."""
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B2C3D4:
        endian, scale = "<", 1e-6
    elif magic == 0xA1B23C4D:
        endian, scale = "<", 1e-9
    else:
        raise SystemExit(f"{path}: not a classic pcap file (write it with tcpdump -w)")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        raise SystemExit(f"{path}: link type {linktype}, expected Ethernet (1)")
    flows: dict[tuple[str, str], Flow] = defaultdict(Flow)
    highest: dict[tuple[str, int, str, int], int] = {}
    offset = 24
    while offset + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        packet = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if len(packet) < 54 or packet[12:14] != b"\x08\x00":
            continue
        ip = packet[14:]
        header = (ip[0] & 0x0F) * 4
        if ip[9] != 6:
            continue
        total = struct.unpack("!H", ip[2:4])[0]
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        tcp = ip[header:]
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        payload = total - header - (tcp[12] >> 4) * 4
        if payload <= 0:
            continue
        if src == PS_ADDRESS:
            key = (dst, "down")
        elif dst == PS_ADDRESS:
            key = (src, "up")
        else:
            continue
        conn = (src, sport, dst, dport)
        end = seq + payload
        top = highest.get(conn)
        # sent again: it ends at or before the highest sequence number this connection has sent
        again = top is not None and not 0 < ((end - top) & 0xFFFFFFFF) < 0x80000000
        if not again:
            highest[conn] = end
        flow = flows[key]
        flow.times.append(sec + frac * scale)
        flow.sizes.append(payload)
        flow.retransmitted.append(again)
    return flows


def bursts(times: np.ndarray, sizes: np.ndarray, gap_s: float, min_bytes: int) -> list[tuple[float, float, int]]:
    """(start, end, bytes) of runs of packets with no gap over ``gap_s``, at least ``min_bytes``."""
    if len(times) == 0:
        return []
    cuts = np.flatnonzero(np.diff(times) > gap_s) + 1
    out = []
    for part_t, part_s in zip(np.split(times, cuts), np.split(sizes, cuts), strict=True):
        if part_s.sum() >= min_bytes:
            out.append((float(part_t[0]), float(part_t[-1]), int(part_s.sum())))
    return out


def together(a: list[tuple[float, float, int]], b: list[tuple[float, float, int]], span: float) -> float:
    """Share of ``span`` seconds in which a burst of ``a`` and one of ``b`` are on the line at once."""
    shared, j = 0.0, 0
    for start, end, _ in a:
        while j < len(b) and b[j][1] < start:
            j += 1
        k = j
        while k < len(b) and b[k][0] < end:
            shared += max(0.0, min(end, b[k][1]) - max(start, b[k][0]))
            k += 1
    return shared / span


def overlaps(a: list[tuple[float, float, int]], b: list[tuple[float, float, int]]) -> np.ndarray:
    """For each burst of ``a``, the share of its duration that bursts of ``b`` were on the line too."""
    out = []
    for start, end, _ in a:
        shared = sum(max(0.0, min(end, e) - max(start, s)) for s, e, _ in b if s < end and e > start)
        out.append(shared / max(end - start, 1e-9))
    return np.array(out)


def step_phases(down: list[tuple[float, float, int]], up: list[tuple[float, float, int]]) -> dict[str, np.ndarray]:
    """Per step (a download burst to the next): its phases in seconds, from the wire."""
    rows: dict[str, list[float]] = defaultdict(list)
    ups = np.array([u[0] for u in up]) if up else np.array([])
    for (d0, d1, _), (n0, _, _) in zip(down, down[1:], strict=False):
        mine = [u for u, s in zip(up, ups, strict=True) if d1 <= s < n0] if len(ups) else []
        if not mine:
            continue
        u0, u1 = mine[0][0], mine[-1][1]
        rows["step"].append(n0 - d0)
        rows["download"].append(d1 - d0)
        rows["compute_gap"].append(u0 - d1)
        rows["upload"].append(u1 - u0)
        rows["request_wait"].append(n0 - u1)
    return {k: np.array(v) for k, v in rows.items()}


def summarise(path: Path, gap_s: float) -> None:
    flows = read_pcap(path)
    workers = sorted({w for w, _ in flows}, key=lambda a: tuple(map(int, a.split("."))))
    t0 = min(f.times[0] for f in flows.values())
    t1 = max(f.times[-1] for f in flows.values())
    span = t1 - t0
    print(f"{path.name}: {span:.1f} s, workers {', '.join(workers)}")
    per: dict[str, dict[str, list[tuple[float, float, int]]]] = {}
    for w in workers:
        per[w] = {}
        for direction in ("down", "up"):
            flow = flows.get((w, direction), Flow())
            t, s = np.array(flow.times), np.array(flow.sizes)
            per[w][direction] = bursts(t, s, gap_s, min_bytes=100_000)
            r = np.array(flow.retransmitted, dtype=bool)
            sent = s.sum() if len(s) else 0
            print(f"  {w} {direction:4}: {sent / span * 8 / 1e6:5.2f} Mbit/s, {len(per[w][direction])} bursts, "
                  f"retransmitted {s[r].sum() / 1e3 if len(s) else 0:7.1f} kB ({r.sum()} packets)")
        phases = step_phases(per[w]["down"], per[w]["up"])
        if "step" in phases:
            med = {k: float(np.median(v)) * 1e3 for k, v in phases.items()}
            p90 = {k: float(np.percentile(v, 90)) * 1e3 for k, v in phases.items()}
            print(f"    {len(phases['step'])} steps, median (p90) ms: " + ", ".join(
                f"{k} {med[k]:.0f} ({p90[k]:.0f})" for k in ("step", "download", "compute_gap", "upload",
                                                            "request_wait")))
    if len(workers) >= 2:
        a, b = workers[:2]
        for me, other in ((a, b), (b, a)):
            shared = overlaps(per[me]["down"], per[other]["down"])
            steps = np.array([n[0] - d[0] for d, n in zip(per[me]["down"], per[me]["down"][1:], strict=False)])
            if len(steps):
                slow = shared[:len(steps)] > 0.5
                print(f"    {me}: {slow.mean():.0%} of steps download beside the other's download (over half of "
                      f"it); their step median {np.median(steps[slow]) * 1e3 if slow.any() else float('nan'):.0f} ms, "
                      f"the others' {np.median(steps[~slow]) * 1e3 if (~slow).any() else float('nan'):.0f} ms")
        print(f"  on the line together: downloads {together(per[a]['down'], per[b]['down'], span):.0%}, "
              f"uploads {together(per[a]['up'], per[b]['up'], span):.0%}, "
              f"a download with the other's upload {together(per[a]['down'], per[b]['up'], span):.0%} / "
              f"{together(per[b]['down'], per[a]['up'], span):.0%}")


def first_gradient_waits(path: Path, gap_s: float) -> np.ndarray:
    """Per step of the worker a worker-side capture belongs to: seconds from its last parameter
    byte to its first gradient segment leaving it (segments over 300 B: not a request)."""
    flows = read_pcap(path)
    (worker,) = {w for w, _ in flows}
    down, up = flows[(worker, "down")], flows[(worker, "up")]
    up_t, up_s = np.array(up.times), np.array(up.sizes)
    steps = bursts(np.array(down.times), np.array(down.sizes), gap_s, min_bytes=100_000)
    waits = []
    for (_, last, _), (following, _, _) in zip(steps, steps[1:], strict=False):
        sent = up_t[(up_t >= last) & (up_t < following) & (up_s > 300)]
        if len(sent):
            waits.append(sent[0] - last)
    return np.array(waits)


def table_row(path: Path, gap_s: float) -> str:
    """One run's row: rate, regime share, step, worker 0's first-gradient wait, upload resent."""
    run = path.with_name(path.name.removesuffix("-ps.pcap"))
    measured = run.with_name(run.name + ".json")
    rate = json.loads(measured.read_text())["points"][0]["steps_per_second"] if measured.is_file() else float("nan")
    flows = read_pcap(path)
    workers = sorted({w for w, _ in flows}, key=lambda a: tuple(map(int, a.split("."))))[:2]
    down = {w: bursts(np.array(flows[(w, "down")].times), np.array(flows[(w, "down")].sizes), gap_s, 100_000)
            for w in workers}
    pairs = [(workers[0], workers[1]), (workers[1], workers[0])] if len(workers) == 2 else []
    beside = f"{np.mean([(overlaps(down[a], down[b]) > 0.5).mean() for a, b in pairs]):.0%}" if pairs else "-"
    step = np.median(np.concatenate([np.diff([b[0] for b in down[w]]) for w in workers]))
    resent = sum(np.array(flows[(w, "up")].sizes)[np.array(flows[(w, "up")].retransmitted, dtype=bool)].sum()
                 for w in workers)
    side = run.with_name(run.name + "-w0.pcap")
    wait = f"{np.median(first_gradient_waits(side, gap_s)) * 1e3:.0f}" if side.is_file() else "-"
    return f"| {run.parent.name}/{run.name} | {rate:.2f} | {beside} | {step * 1e3:.0f} | {wait} | {resent / 1e3:.0f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pcaps", nargs="+", type=Path)
    parser.add_argument("--detail", action="store_true", help="each capture's per-worker phases, not the table")
    parser.add_argument("--gap-ms", type=float, default=20.0,
                        help="a pause longer than this ends a worker's burst (default 20)")
    args = parser.parse_args(argv)
    gap_s = args.gap_ms / 1e3
    if args.detail:
        for path in args.pcaps:
            summarise(path, gap_s)
        return 0
    print("| run | steps/s | steps downloading beside the other's | step (ms) | worker 0: last parameter "
          "to first gradient (ms) | upload resent (kB) |")
    print("|---|---|---|---|---|---|")
    for path in args.pcaps:
        print(table_row(path, gap_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
