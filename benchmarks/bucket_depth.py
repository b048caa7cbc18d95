"""Does TensorFlow's lone worker gain what the replay's bucket says? Measure one worker behind the
emulated link with the shaper's usual 16 KiB bucket and with a deeper one, and replay both.

    python benchmarks/bucket_depth.py ROOT POINT [--bucket BYTES] [--duration S] [--repeats N]

POINT is ``<environment>/<model>-<bandwidth>`` of an environment campaign under ROOT whose
``settled/`` holds the model's measurement, and ``settled-bucket/`` (else ``settled/``) its step
graph and validation (its link fit and replay settings). One
worker is measured twice on a fresh shaped link of the point's bandwidth, queue and congestion
control: with the topology's bucket (16 KiB) and with ``--bucket`` (default 64 KiB), by setting
``tracetool.cluster.topology.SMALL_BURST_BYTES`` for this process only; each measurement goes to
``<point>/bucket-depth/<bytes>/``. Then the point's graph is replayed for one worker on the
validation's link with each bucket. Prints the measured and replayed rates and the gain from the
deeper bucket. Needs root; takes a few minutes. Prints figures; not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.request_queue_fit import recorded_link, recorded_settings  # noqa: E402
from replay import predict  # noqa: E402
from tracetool.cli import main as tracetool_main  # noqa: E402
from tracetool.cluster import topology  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402


def measure_one_worker(point: Path, out: Path, bucket: int, duration_s: float, repeats: int) -> float:
    """One worker's steps/s on the point's shaped link with a ``bucket``-byte tbf burst."""
    measured = json.loads((point / "settled" / "measured" / "measured.json").read_text())
    shaping = measured["shaping"]
    topology.SMALL_BURST_BYTES = bucket
    code = tracetool_main(["measure", "--model", measured["model"], "--batch-size", str(measured["batch_size"]),
                           "--workers", "1", "--bandwidth", f"{int(measured['bandwidth_bps'])}bit",
                           "--queue", f"{shaping['queue']['ms']}ms",
                           "--tcp-congestion-control", shaping["tcp_congestion_control"],
                           "--duration", str(duration_s), "--settle", "5", "--repeats", str(repeats),
                           "--out", str(out)])
    if code != 0:
        raise SystemExit(f"measure exited {code}")
    document = json.loads((out / "measured.json").read_text())
    if document["shaping"]["burst_bytes"] != bucket:
        raise SystemExit(f"the link was shaped with a {document['shaping']['burst_bytes']}-byte bucket, not {bucket}")
    return float(document["points"][0]["steps_per_second"])


def replayed_one_worker(point: Path, bucket: int) -> float:
    validation = point / "settled-bucket" if (point / "settled-bucket").is_dir() else point / "settled"
    prediction = json.loads((validation / "prediction.json").read_text())
    link = replace(recorded_link(prediction), burst_bytes=float(bucket))
    graph = load_stepgraph(validation / "graph.json")
    return predict(graph, [1], link, recorded_settings(prediction)).points[0].steps_per_second


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("point")
    parser.add_argument("--bucket", type=int, default=64 * 1024)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    point = args.root / args.point
    rows = []
    for bucket in (topology.SMALL_BURST_BYTES, args.bucket):
        measured = measure_one_worker(point, point / "bucket-depth" / str(bucket), bucket, args.duration, args.repeats)
        rows.append((bucket, measured, replayed_one_worker(point, bucket)))
    for bucket, measured, replayed in rows:
        print(f"{args.point}: bucket {bucket} B: measured {measured:.3f} steps/s, replayed {replayed:.3f} "
              f"({100 * (replayed / measured - 1):+.1f}%)")
    (small, m0, r0), (deep, m1, r1) = rows
    print(f"gain from {small} B to {deep} B: measured {100 * (m1 / m0 - 1):+.1f}%, "
          f"replayed {100 * (r1 / r0 - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
