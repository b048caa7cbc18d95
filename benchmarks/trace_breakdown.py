"""Where a traced step's time goes, one worker count next to another.

Reads traced steps (RunMetadata) of a profile folder or of ``tracetool measure --trace-steps``
(``OUT/traces/workers-N/worker-I/``) and prints, per folder, the mean over its steps of:

- step: wall time of the step, first op start to last op end;
- down span / up span: first transfer start to last transfer end, per direction;
- down MB/s, up MB/s: bytes of the direction divided by its span (what the link delivered
  while that direction was in use);
- worker compute: summed duration of the worker's own ops (excluding transfers);
- PS ops: summed duration of the PS's ops for this step.

Comparing a 1-worker folder with an N-worker folder of the same shaped link shows whether the
slower steps under contention come from the link (spans grow, rates fall) or from the CPU
(compute grows). Prints figures; not a test. Run from the repository root:

    python benchmarks/trace_breakdown.py OUT/traces/workers-1/worker-0 OUT/traces/workers-2/worker-*
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.graph.read_runmetadata import read_runmetadata  # noqa: E402
from tracetool.graph.trace_records import StepTrace, job_of  # noqa: E402


def breakdown(trace: StepTrace) -> dict[str, float]:
    """Times in milliseconds and rates in MB/s of one traced step."""
    records = trace.records
    start = min(r.start_us for r in records)
    end = max(r.end_us for r in records)
    spans: dict[str, list[tuple[float, float, int]]] = {"down": [], "up": []}
    compute_us = ps_us = 0.0
    for r in records:
        if r.transfer is not None:
            direction = "down" if job_of(r.transfer.src_device) == "ps" else "up"
            spans[direction].append((r.start_us, r.end_us, r.transfer.bytes))
        elif job_of(r.device) == "ps":
            ps_us += r.duration_us
        else:
            compute_us += r.duration_us
    out = {"step": (end - start) / 1e3, "worker compute": compute_us / 1e3, "PS ops": ps_us / 1e3}
    for direction, items in spans.items():
        if not items:
            out[f"{direction} span"] = out[f"{direction} MB/s"] = float("nan")
            continue
        span_us = max(e for _, e, _ in items) - min(s for s, _, _ in items)
        out[f"{direction} span"] = span_us / 1e3
        out[f"{direction} MB/s"] = sum(b for _, _, b in items) / span_us if span_us > 0 else float("nan")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="folders of step-*.runmeta.pb files")
    args = parser.parse_args()
    columns = ["step", "down span", "up span", "down MB/s", "up MB/s", "worker compute", "PS ops"]
    print(f"{'folder':<48} {'steps':>5} " + " ".join(f"{c:>14}" for c in columns) + "   (ms, MB/s)")
    for folder in args.folders:
        files = sorted(Path(folder).glob("step-*.runmeta.pb"))
        if not files:
            print(f"{folder}: no step-*.runmeta.pb files", file=sys.stderr)
            continue
        rows = [breakdown(read_runmetadata(f)) for f in files]
        means = {c: float(np.nanmean([r[c] for r in rows])) for c in columns}
        print(f"{str(folder)[-48:]:<48} {len(rows):>5} " + " ".join(f"{means[c]:>14.1f}" for c in columns))


if __name__ == "__main__":
    main()
