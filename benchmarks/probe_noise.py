"""How much validate's link probe moves between runs, with its window and with longer ones.

Prints figures; not a test. For a validated point (a folder with a ``link-probe.json`` of
validate, which holds the step's shape), probes the same shaped link again a few times per
window length (steps of each worker per worker count, as ``link_probe.PROBE_STEPS_PER_WORKER``)
and prints each run's contention efficiency, rates and fitted reverse efficiencies. Takes the
machine's lock, as every probe does.

    flock /tmp/tfsim-tf.lock python benchmarks/probe_noise.py \\
        benchmarks/results/environments/cubic-5ms/vgg-25mbit/reprobed --queue 5ms --steps 3,6 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay.engine.link import payload_efficiency_for_mtu  # noqa: E402
from tracetool.cluster.topology import parse_queue  # noqa: E402
from tracetool.errors import ToolError  # noqa: E402
from tracetool.measure.link_calibration import calibrate_link_to_probe  # noqa: E402
from tracetool.measure.link_probe import DEFAULT_PROBE_WINDOW_S, probe_link  # noqa: E402

MTU = 1500
WORKERS = [1, 2, 3, 4]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("point", type=Path, help="a folder holding validate's link-probe.json")
    parser.add_argument("--queue", default="5ms", help="the shaped link's buffer, as for validate")
    parser.add_argument("--tcp-congestion-control", default="cubic")
    parser.add_argument("--steps", default="3,6", help="steps per worker of each window length to try")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.005, help="the replay's link latency, seconds")
    args = parser.parse_args()
    source = args.point / "link-probe.json"
    if not source.is_file():
        sys.exit(f"error: {source} does not exist; give a folder that tracetool validate wrote")
    shape = json.loads(source.read_text())
    bandwidth, down, up, compute = (shape["bandwidth_bps"], shape["download_bytes"], shape["upload_bytes"],
                                    shape["compute_s"])
    payload_bps = bandwidth * payload_efficiency_for_mtu(MTU)
    alone_step_s = 8.0 * (down + up) / payload_bps + compute
    for steps in (int(s) for s in args.steps.split(",")):
        window_s = max(DEFAULT_PROBE_WINDOW_S, steps * max(WORKERS) * alone_step_s)
        for run in range(1, args.repeats + 1):
            began = time.monotonic()
            try:
                probe = probe_link(bandwidth, down, up, compute, WORKERS, payload_bps, duration_s=window_s,
                                   tcp_congestion_control=args.tcp_congestion_control, queue=parse_queue(args.queue))
            except ToolError as exc:
                sys.exit(f"error: {exc} (here: more --steps)")
            fit = calibrate_link_to_probe(probe.to_json_dict(), args.latency)
            rates = " ".join(f"{p.steps_per_second:.3f}" for p in probe.points)
            print(f"{steps} steps per worker ({window_s:.0f} s windows), run {run}: contention efficiency "
                  f"{probe.contention_efficiency:.3f}, steps/s at 1-4 workers {rates}, reverse efficiencies "
                  f"{fit.download_reverse_efficiency:.2f} / {fit.upload_reverse_efficiency:.2f} "
                  f"({time.monotonic() - began:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
