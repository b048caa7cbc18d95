"""Which link latency makes one worker's replay match its measurement, per network environment.

    python benchmarks/latency_fit.py ROOT

ROOT is an environment campaign's folder (``benchmarks/environment_campaign.sh``):
``<environment>/<model>-<bandwidth>/validation.json`` beside its ``graph.json``, and
``probes/<environment>-<bandwidth>.json``. One worker has no contention, so its step on the
shaped link depends on the line rate, the profile and the latency alone; this script solves the
latency by bisection on the replay (deterministic durations, the validation's own link) and
prints it next to what validate assumed (the buffer's nominal time) and what the link profile
measured (half the idle round trip plus the direction's standing queue, per direction).
Prints figures; not a test.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replay import ReplaySettings, predict  # noqa: E402
from replay.engine.link import LinkConfig  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402

LATENCY_LIMIT_S = 0.5


def one_worker_rate(graph: object, link: LinkConfig) -> float:
    result = predict(graph, [1], link, ReplaySettings(seeds=1, deterministic=True, jobs=1))
    return result.points[0].steps_per_second


def fitted_latency_s(graph: object, link: LinkConfig, measured: float) -> float | None:
    """The latency at which the replay's one worker runs at ``measured`` steps/s; None when even
    no latency is too slow (the replay cannot reach the measurement by latency alone)."""
    low, high = 0.0, LATENCY_LIMIT_S
    if one_worker_rate(graph, replace(link, latency_s=low)) < measured:
        return None
    for _ in range(30):
        mid = (low + high) / 2
        if one_worker_rate(graph, replace(link, latency_s=mid)) > measured:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("benchmarks/results/environments")
    print(f"{'environment':12s} {'point':18s} {'measured':>8s} {'nominal':>8s} {'profile':>15s} {'fitted':>8s}")
    for path in sorted(root.glob("*/*/validation.json")):
        env, point = path.parent.parent.name, path.parent.name
        v = json.loads(path.read_text())
        one = [r for r in v["rows"] if r["workers"] == 1]
        if not one:
            continue
        link_json = v["prediction_link"]
        link = LinkConfig(**{**link_json, "worker_bandwidths_bps": tuple(link_json["worker_bandwidths_bps"])})
        graph = load_stepgraph(path.parent / "graph.json")
        fitted = fitted_latency_s(graph, link, one[0]["measured"])
        probe = root / "probes" / f"{env}-{point.rsplit('-', 1)[1]}.json"
        profile = "-"
        if probe.exists():
            p = json.loads(probe.read_text())
            half_rtt = p["rtt_idle_s"] / 2
            profile = (f"{(half_rtt + p['download']['queue_delay_s']) * 1e3:5.1f}/"
                       f"{(half_rtt + p['upload']['queue_delay_s']) * 1e3:5.1f} ms")
        shown = f"{fitted * 1e3:6.1f}ms" if fitted is not None else "  < 0"
        print(f"{env:12s} {point:18s} {one[0]['measured']:8.3f} {v['prediction_link']['latency_s'] * 1e3:6.1f}ms "
              f"{profile:>15s} {shown:>8s}", flush=True)


if __name__ == "__main__":
    main()
