"""Phases of traced worker steps, split by whether another worker was uploading when the step began.

Reads ``tracetool measure --trace-steps K`` output (``OUT/traces/workers-N/worker-I/step-*.runmeta.pb``;
the workers trace concurrently, on one clock). For every step it takes, in ms from the first op of
the worker's own partition:

- PS start: the first op of the PS partition. The worker's RunGraph request crosses the upload
  direction to get there, so it waits behind whatever queue that direction holds.
- first download: the first parameter transfer over 10 kB.
- download span / upload span: first start to last end of the step's transfers over 10 kB, per
  direction.
- down->up: the last download's end to the first upload's start (compute in between).
- step: the first op to the last op's end.

and prints the medians, separately for steps that began while another worker's upload was in
flight and steps that did not. On a one-worker folder every step falls in the second group, so
the two folders side by side show what contention adds to each phase. Prints figures; not a test:

    python benchmarks/step_phases.py OUT/traces/workers-1 OUT/traces/workers-2
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.graph.read_runmetadata import read_runmetadata  # noqa: E402
from tracetool.graph.trace_records import OpRecord, job_of  # noqa: E402

MIN_TRANSFER_BYTES = 10_000
PHASES = ("PS start", "first download", "download span", "down->up", "upload span", "step")


def step_times(records: list[OpRecord]) -> dict[str, float]:
    """The step's landmarks in microseconds on the shared clock."""
    own = [r for r in records if job_of(r.device) == "worker" and r.transfer is None]
    ps = [r for r in records if job_of(r.device) == "ps"]
    big = [r for r in records if r.transfer is not None and r.transfer.bytes > MIN_TRANSFER_BYTES]
    downs = [r for r in big if job_of(r.transfer.src_device) == "ps"]
    ups = [r for r in big if job_of(r.transfer.src_device) != "ps"]
    if not (own and ps and downs and ups):
        raise SystemExit("a traced step lacks worker ops, PS ops, downloads or uploads; is this a PS training trace?")
    return {"start": min(r.start_us for r in own), "ps": min(r.start_us for r in ps),
            "down_start": min(r.start_us for r in downs), "down_end": max(r.end_us for r in downs),
            "up_start": min(r.start_us for r in ups), "up_end": max(r.end_us for r in ups),
            "end": max(r.end_us for r in records)}


def phases_ms(s: dict[str, float]) -> tuple[float, ...]:
    return tuple(x / 1e3 for x in (s["ps"] - s["start"], s["down_start"] - s["start"], s["down_end"] - s["down_start"],
                                   s["up_start"] - s["down_end"], s["up_end"] - s["up_start"], s["end"] - s["start"]))


def summarize(folder: Path) -> None:
    workers = {w.name: [step_times(read_runmetadata(f).records) for f in sorted(w.glob("step-*.runmeta.pb"))]
               for w in sorted(folder.glob("worker-*"))}
    if not any(workers.values()):
        print(f"{folder}: no worker-*/step-*.runmeta.pb files", file=sys.stderr)
        return

    def other_uploading(worker: str, t: float) -> bool:
        return any(s["up_start"] <= t <= s["up_end"] for other, steps in workers.items() if other != worker
                   for s in steps)

    groups: dict[bool, list[tuple[float, ...]]] = {True: [], False: []}
    for worker, steps in workers.items():
        for s in steps:
            groups[other_uploading(worker, s["start"])].append(phases_ms(s))
    for busy, rows in groups.items():
        if rows:
            medians = [statistics.median(column) for column in zip(*rows, strict=True)]
            label = "another worker uploading" if busy else "no other upload"
            print(f"{str(folder)[-40:]:<40} {label:<25} {len(rows):>5} "
                  + " ".join(f"{m:>14.1f}" for m in medians))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="traces/workers-N folders")
    args = parser.parse_args()
    print(f"{'folder':<40} {'at step start':<25} {'steps':>5} " + " ".join(f"{p:>14}" for p in PHASES) + "   (ms)")
    for folder in args.folders:
        summarize(folder)


if __name__ == "__main__":
    main()
