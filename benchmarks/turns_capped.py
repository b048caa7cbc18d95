"""Which points validated in turns stopped at a cap on runs that validate's default now lifts.

A point measured with ``--max-repeats`` M stopped adding runs to a worker count at M even where
its rule still asked for more (the runs' mean known to worse than ``--max-standard-error``, or
the model's and its probe's means apart beyond their spread). Below that cap the rule is the
same, so a point none of whose counts was stopped by it is what today's defaults would have
measured; the others are listed, as ``ENV/POINT`` for ``environment_turns.sh``, with the counts
the cap stopped and why.

    python benchmarks/turns_capped.py ROOT [--max-repeats 8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.measure.repeats import VALIDATE_MAX_REPEATS, runs_this_round, twin_runs_disagree  # noqa: E402


def runs_per_count(measured_file: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    document = json.loads(measured_file.read_text())
    return {int(p["workers"]): p.get("runs") or [p] for p in document["points"]}, document


def stopped_counts(turns: Path, max_repeats: int) -> list[str]:
    """The worker counts whose rule for more runs would go on under ``max_repeats``, and why."""
    model, settings = runs_per_count(turns / "measured" / "measured.json")
    probe, _ = runs_per_count(turns / "probe-measured" / "measured.json")
    limit, repeats = settings.get("max_standard_error"), settings["repeats"]
    if limit is None:
        return []
    stopped = []
    for workers, runs in model.items():
        twin = probe.get(workers)
        rules = [(repeats, runs, max_repeats, limit)] + ([(repeats, twin, max_repeats, limit)] if twin else [])

        def disagreement(runs: list[dict[str, Any]] = runs, twin: list[dict[str, Any]] | None = twin) -> str | None:
            return twin_runs_disagree(runs, twin, limit) if twin else None

        reasons = [r for r in runs_this_round(rules, disagreement) if r]
        if reasons:
            stopped.append(f"{workers} workers after {len(runs)} runs: {reasons[0]}")
    return stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--max-repeats", type=int, default=VALIDATE_MAX_REPEATS)
    args = parser.parse_args()
    finished = sorted(args.root.glob("*/*/turns/validation.json"))
    listed = 0
    for validation in finished:
        turns = validation.parent
        stopped = stopped_counts(turns, args.max_repeats)
        if stopped:
            listed += 1
            print(f"{turns.parent.parent.name}/{turns.parent.name}  # {'; '.join(stopped)}")
    print(f"# {listed} of {len(finished)} points validated in turns stopped short of {args.max_repeats} runs "
          "where their rule asked for more", file=sys.stderr)


if __name__ == "__main__":
    main()
