"""How the upload queue fills when a worker's gradients start after an idle spell: what the
replay's request-queue growth (``LinkConfig.request_queue_growth``) stands for, measured.

    python benchmarks/upload_queue_ramp.py OUT BANDWIDTH_MBIT QUEUE CC [--upload-s S] [--idle-s S] [--trials N]
        [--transport tcp|grpc]
    python benchmarks/upload_queue_ramp.py OUT --plot

On this machine's emulated link (``ShapedTopology``, two workers and a PS): the network probe's
bulk rates and standing upload queue first. Then ``--trials`` times: worker 1, whose connection
has carried a bulk upload before, idles ``--idle-s`` (default 2 s: longer than any retransmission
timeout, so a CUBIC window restarts; 0.3 s is shorter than the timeout, as between the uploads
of a worker that downloads and computes for that long), then uploads
``--upload-s`` seconds of bytes at the line rate; worker 0 pings the PS all the while. A ping's
round trip less the idle one is the queue in front of it, and its send time less the upload's
start is the upload's age. ``--transport grpc`` moves the upload as TensorFlow does: a step of
the probe agent (a 1 kB download, the idle spell as compute, the upload as eight concurrent gRPC
calls on one channel, each under HTTP/2 flow control), ``--trials`` + 1 steps of which the first,
on a fresh connection, is left out. Writes OUT/<bandwidth>mbit-<queue>-<cc>[-idle<S>s][-grpc].json;
``--plot`` draws every JSON in OUT into OUT/upload-queue-ramp.png. Run it alone (it shapes a
link and moves bytes for some 25 s); prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay.engine.link import payload_efficiency_for_mtu  # noqa: E402
from tracetool.cluster.topology import ShapedTopology, parse_queue  # noqa: E402
from tracetool.measure import network_probe  # noqa: E402

DEFAULT_IDLE_S = 2.0
PING_INTERVAL_S = 0.004


def measure(bandwidth_mbit: float, queue_text: str, cc: str, upload_s: float, idle_s: float, trials: int,
            transport: str = "tcp") -> dict:
    """The standing upload queue and, per trial, (age, queue) pairs in seconds."""
    bandwidth = bandwidth_mbit * 1e6
    queue = parse_queue(queue_text)
    with ShapedTopology(2, bandwidth, cc, queue) as topology, network_probe._ProbeServer(topology):
        cluster = network_probe._ProbeCluster(topology, 120.0)
        guess = bandwidth * payload_efficiency_for_mtu(network_probe.MTU) / 8
        down, up, idle = network_probe._bulk_rates(cluster, guess, print)
        _, loaded = network_probe._loaded_round_trips(cluster, down, up, print)
        standing = network_probe.queue_delay_s(loaded, idle)
        t0 = cluster.now() + cluster.lead_s
        if transport == "grpc":
            begin = t0 + 1.0
            until = begin + (trials + 1) * (upload_s + idle_s + 0.5)
            uploader = [{"op": "steps", "download": 1024, "upload": int(up * upload_s), "compute": idle_s,
                         "at": begin, "warm_until": begin, "until": until, "transport": "grpc"}]
            pinger = [{"op": "ping", "count": 1_000_000, "interval": PING_INTERVAL_S, "at": begin, "until": until}]
        else:
            uploader = [{"op": "up", "bytes": int(up * 1.0), "at": t0}]
            pinger = []
            for k in range(trials):
                start = t0 + 1.0 + idle_s + k * (upload_s + idle_s)
                uploader.append({"op": "up", "bytes": int(up * upload_s), "at": start})
                pinger.append({"op": "ping", "count": int(upload_s / 0.01) + 5, "interval": PING_INTERVAL_S,
                               "at": start - 0.02})
        result = cluster.run({0: pinger, 1: uploader})
    base = statistics.median(idle)
    if transport == "grpc":  # (start, end) of each step's upload after the first
        uploads = [(span[2], span[3]) for span in result[1][0]["spans"][1:trials + 1]]
        pings = [result[0][0]] * len(uploads)
    else:
        uploads = [(u["start"], u["end"]) for u in result[1][1:]]
        pings = result[0]
    ramps = []
    for (start, end), seen in zip(uploads, pings, strict=True):
        ramps.append([(t - start, rtt - base) for t, rtt in zip(seen["times"], seen["rtts"], strict=True)
                      if start - 0.02 <= t <= end])
    return {"bandwidth_mbit": bandwidth_mbit, "queue": queue_text, "tcp_congestion_control": cc,
            "transport": transport, "upload_s": upload_s, "idle_s": idle_s, "idle_rtt_s": base,
            "standing_s": standing, "ramps": ramps}


def summary(run: dict) -> str:
    """The queue at a few ages, median over trials (nearest ping at or after each age)."""
    cells = []
    for age in (0.01, 0.05, 0.1, 0.2, 0.4):
        seen = [next((q for a, q in ramp if a >= age), None) for ramp in run["ramps"]]
        seen = [q for q in seen if q is not None]
        cells.append(f"{age * 1e3:.0f} ms: {statistics.median(seen) * 1e3:5.1f}" if seen else f"{age * 1e3:.0f} ms: -")
    return (f"{run['bandwidth_mbit']:g}mbit {run['queue']} {run['tcp_congestion_control']}, "
            f"{run['idle_s']:g} s idle, {run.get('transport', 'tcp')}: standing "
            f"{run['standing_s'] * 1e3:.1f} ms; queue at upload age " + ", ".join(cells))


def plot(out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    columns = min(4, len(runs))
    rows = -(-len(runs) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.4 * rows), sharey=True, squeeze=False)
    for ax in axes.flat[len(runs):]:
        ax.set_visible(False)
    for ax, run in zip(axes.flat, runs, strict=False):
        for ramp in run["ramps"]:
            ax.plot([a * 1e3 for a, _ in ramp], [q * 1e3 for _, q in ramp], marker=".", lw=0.8)
        ax.axhline(run["standing_s"] * 1e3, color="grey", ls="--", lw=0.8, label="standing queue")
        for growth in (0.3, 1.0):
            ax.plot([0, 400], [0, 400 * growth], color="black", ls=":", lw=0.8)
            ax.annotate(f"{growth:g} s/s", (400 if growth < 1 else 100, min(400, 100 / growth) * growth), fontsize=7)
        ax.set_title(f"{run['bandwidth_mbit']:g}mbit, {run['queue']} buffer, {run['tcp_congestion_control']}, "
                     f"{run['idle_s']:g} s idle, {run.get('transport', 'tcp')}", fontsize=8)
        ax.set_xlabel("upload age (ms)")
        ax.set_ylim(0, 130)
    axes[0][0].set_ylabel("queue ahead of a ping (ms)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = out / "upload-queue-ramp.png"
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("bandwidth_mbit", nargs="?", type=float)
    parser.add_argument("queue", nargs="?")
    parser.add_argument("cc", nargs="?")
    parser.add_argument("--upload-s", type=float, default=0.8)
    parser.add_argument("--idle-s", type=float, default=DEFAULT_IDLE_S)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--transport", choices=("tcp", "grpc"), default="tcp")
    parser.add_argument("--plot", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.plot:
        for p in sorted(args.out.glob("*.json")):
            print(summary(json.loads(p.read_text())))
        print(f"plot written to {plot(args.out)}")
        return 0
    if args.bandwidth_mbit is None or args.queue is None or args.cc is None:
        parser.error("give BANDWIDTH_MBIT QUEUE CC, or --plot")
    run = measure(args.bandwidth_mbit, args.queue, args.cc, args.upload_s, args.idle_s, args.trials, args.transport)
    idle = "" if args.idle_s == DEFAULT_IDLE_S else f"-idle{args.idle_s:g}s"
    grpc = "-grpc" if args.transport == "grpc" else ""
    path = args.out / f"{args.bandwidth_mbit:g}mbit-{args.queue}-{args.cc}{idle}{grpc}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(run, indent=1))
    tmp.replace(path)
    print(summary(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
