"""The analytic model (mean value analysis) against the replay engine and the measured clusters.

Reads the first network's validation table in docs/measure.md (model, PS link, workers, the engine's prediction, the
measured steps/s), solves the queueing network for the same model (its committed profile in
``traces/MODEL/graph.json``), link and workers, and prints one Markdown table and the error
summary of both. The link gets the shaped queue's 5 ms as latency, as the validation's
predictions did (docs/measure.md, item 1).

    python benchmarks/analytic_vs_measured.py
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from replay.analytic.run import analytic_prediction  # noqa: E402
from replay.engine.link import target_link  # noqa: E402
from replay.units import parse_bandwidth_bps  # noqa: E402
from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402

ROW = re.compile(r"^\| (alexnet|vgg|inception|resnet|mlp) \| (\S+) \| [^|]+ \| (\d) \| ([\d.]+) \|[^|]+\|[^|]+\| "
                 r"([\d.]+) ±[^|]+\|[^|]+\|[^|]+\| ([\d.]+) \|")
QUEUE_LATENCY_S = 0.005


def main() -> None:
    rows = [m.groups() for m in map(ROW.match, (ROOT / "docs" / "measure.md").read_text().splitlines()) if m]
    began = time.perf_counter()
    lines = ["| model | PS link | workers | measured | replay | error | analytic | error |",
             "|---|---|---|---|---|---|---|---|"]
    errors: dict[str, list[float]] = {"replay": [], "analytic": []}
    cache: dict[tuple[str, str], list[float]] = {}
    for model, link_text, workers, replayed, measured, cores in rows:
        key = (model, link_text)
        if key not in cache:
            graph = load_stepgraph(ROOT / "traces" / model / "graph.json")
            link = target_link(graph, parse_bandwidth_bps(link_text), QUEUE_LATENCY_S)
            prediction, _ = analytic_prediction(graph, [1, 2, 3, 4], link)
            cache[key] = [p.steps_per_second for p in prediction.points]
        analytic = cache[key][int(workers) - 1]
        m, r = float(measured), float(replayed)
        flagged = float(cores) >= 1.0  # the validation's CPU-saturation flag: half this machine's cores
        e_r, e_a = 100 * (r - m) / m, 100 * (analytic - m) / m
        if not flagged:
            errors["replay"].append(abs(e_r))
            errors["analytic"].append(abs(e_a))
        lines.append(f"| {model} | {link_text} | {workers} | {m:.3f} | {r:.3f} | {e_r:+.1f}% | {analytic:.3f} | "
                     f"{e_a:+.1f}% |" + (" CPU" if flagged else ""))
    print("\n".join(lines))
    for name, values in errors.items():
        print(f"{name}: {len(values)} points with the CPU under half the machine: median |error| "
              f"{statistics.median(values):.1f}%, max {max(values):.1f}%, within 10%: "
              f"{sum(v <= 10 for v in values)}")
    print(f"analytic solutions of {len(cache)} model-link pairs took {time.perf_counter() - began:.2f} s")


if __name__ == "__main__":
    main()
