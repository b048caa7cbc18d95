"""Write the graph-shaped twin probe of a step graph as a model file, to measure it beside the model.

validate's twin is a chain of stages (``tracetool.measure.probe_schedule``); the graph-shaped twin
(``tracetool.measure.probe_graph_schedule``) keeps the worker's op dependencies, so that its
compute overlaps the transfers as the model's does. This writes it, with the same calibration
scale validate gives the chain, for ``tracetool measure --model FILE --batch-size 1 ...``:

    python benchmarks/graph_twin.py GRAPH.json OUT.py [--model NAME]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.graph.stepgraph import load_stepgraph  # noqa: E402
from tracetool.measure.probe_graph_schedule import graph_schedule  # noqa: E402
from tracetool.measure.tensorflow_probe import graph_twin_probe_model_source, untraced_compute_scale  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="the model")
    args = parser.parse_args()
    graph = load_stepgraph(args.graph)
    schedule = graph_schedule(graph, untraced_compute_scale(graph))
    args.out.write_text(graph_twin_probe_model_source(args.model, schedule, 0.0, writer="benchmarks/graph_twin.py"))
    print(f"{args.out}: {len(schedule.group_compute_s)} groups, {schedule.compute_s * 1e3:.1f} ms of compute")
    return 0


if __name__ == "__main__":
    sys.exit(main())
