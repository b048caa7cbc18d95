"""Exit 0 when a campaign point's step graph was profiled on this machine's CPU, 1 otherwise.

    python3 benchmarks/profiled_here.py GRAPH [MEASURED]

A graph written before graphs named their CPU takes the CPU of the point's first measurement
(MEASURED, whose runs were on the machine that profiled). environment_turns.sh profiles again
where this says no, so that no point predicts one CPU's runs from another's compute.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tracetool.cluster.machine_facts import cpu_model


def profiled_cpu(graph: Path, measured: Path | None) -> str | None:
    """The CPU the graph names, or else the one its first measurement ran on."""
    named = json.loads(graph.read_text()).get("model", {}).get("cpu_model")
    if named is None and measured is not None and measured.is_file():
        named = json.loads(measured.read_text()).get("cpu_model")
    return named


def main(argv: list[str]) -> int:
    graph = Path(argv[0])
    if not graph.is_file():
        return 1
    here = cpu_model()
    there = profiled_cpu(graph, Path(argv[1]) if len(argv) > 1 else None)
    if there != here:
        print(f"{graph} was profiled on {there or 'an unnamed CPU'}, this machine is {here}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
