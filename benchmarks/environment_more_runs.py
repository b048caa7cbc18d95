"""Bring a campaign's points to validate's rule for runs that disagree, without running them all again.

validate runs two clusters per worker count and, where their mean is uncertain by more than 4%
(its standard error; two runs more than 8% apart), more, one at a time, up to four
(``tracetool.measure.repeats.runs_to_try``). Its TensorFlow probe follows the same rule. The
campaign's points were measured and probed with two runs per count; this runs the extra runs
the rule asks for, each alone on the point's link as validate would (``tracetool measure
--workers N --repeats 1``, the TensorFlow probe's model for the probe), and writes

    POINT/more-runs/measured.json    the point's measurement with the extra runs folded in
    POINT/more-runs/link-probe.json  the point's two-run TensorFlow probe with its extra runs
    POINT/more-runs/extra/           each extra run's own measurement

which ``MEASURED=more-runs/measured.json LINK_PROBE=more-runs/link-probe.json
benchmarks/environment_repredict.sh ROOT more-runs-predicted`` then re-predicts.

    python benchmarks/environment_more_runs.py ROOT [ENV/POINT ...]

TRACETOOL names the command (default ``tracetool``); every run takes /tmp/tfsim-tf.lock, so other
TensorFlow work waits between runs. Finished extra runs are kept and reused when it runs again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracetool.atomic_files import write_json_atomically  # noqa: E402
from tracetool.measure.repeats import (  # noqa: E402
    VALIDATE_MAX_REPEATS,
    VALIDATE_MAX_STANDARD_ERROR,
    combine_runs,
    runs_to_try,
)
from tracetool.measure.tensorflow_probe import link_probe_of_measurement  # noqa: E402

REPEATS = 2  # the campaign's runs per count, validate's --repeats and --probe-repeats
PROBE_WINDOW_S = 20.0  # the campaign's TensorFlow probe windows (its second runs took the same)
MERGED_PROBE = "tf-probe-merged/link-probe.json"
LOCK = "/tmp/tfsim-tf.lock"


def one_run(dir_: Path, measure_args: list[str]) -> dict[str, Any]:
    """The point of one cluster run of ``tracetool measure``; kept in ``dir_`` and reused if there."""
    measured = dir_ / "measured.json"
    if not measured.is_file():
        command = ["flock", LOCK, os.environ.get("TRACETOOL", "tracetool"), "measure", *measure_args,
                   "--repeats", "1", "--out", str(dir_)]
        log = dir_.with_suffix(".log")
        dir_.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed; see {log}")
    return json.loads(measured.read_text())


def as_run(point: dict[str, Any]) -> dict[str, Any]:
    """A single-run point as one of a repeated point's runs."""
    return {k: v for k, v in point.items() if k not in ("repeats", "run_steps_per_second", "run_updates_per_second")}


def extend(runs: list[dict[str, Any]], run_next: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    """``runs`` with the extra runs validate's rule asks for, started one at a time."""
    runs = list(runs)
    while runs_to_try(REPEATS, runs, VALIDATE_MAX_REPEATS, VALIDATE_MAX_STANDARD_ERROR):
        runs.append(run_next(len(runs) + 1))
    return runs


def link_arguments(point_dir: Path) -> list[str]:
    """The shaped link of ``ENV/MODEL-BANDWIDTH``: environment ``CC-QUEUE``."""
    env, name = point_dir.parent.name, point_dir.name
    cc, queue = env.rsplit("-", 1)
    return ["--bandwidth", name.rsplit("-", 1)[1], "--queue", queue, "--tcp-congestion-control", cc]


def more_measured_runs(point_dir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    measured = json.loads((point_dir / "measured/measured.json").read_text())
    base = ["--model", measured["model"], "--batch-size", str(measured["batch_size"]),
            "--duration", f"{measured['duration_s']:g}", "--warmup", str(measured["warmup_steps"]),
            *link_arguments(point_dir)]
    points = []
    for point in measured["points"]:
        workers = point["workers"]
        runs = point.get("runs") or [as_run(point)]

        def run_next(k: int, workers: int = workers) -> dict[str, Any]:
            say(f"{point_dir.parent.name}/{point_dir.name}: {workers} worker(s), run {k}")
            extra = one_run(point_dir / f"more-runs/extra/measured-w{workers}-r{k}", [*base, "--workers", str(workers)])
            return as_run(extra["points"][0])

        more = extend(runs, run_next)
        points.append(combine_runs(more, measured["batch_size"]) if len(more) > len(runs) else point)
    return {**measured, "points": points}


def more_probe_runs(point_dir: Path, say: Callable[[str], None]) -> dict[str, Any]:
    probe = json.loads((point_dir / MERGED_PROBE).read_text())
    model_file = sorted(point_dir.glob("tf-probe*/probe_model.py"))[0]
    base = ["--model", str(model_file), "--batch-size", "1", "--duration", f"{PROBE_WINDOW_S:g}",
            *link_arguments(point_dir)]
    points = []
    for workers in sorted({p["workers"] for p in probe["points"]}):
        runs = [p for p in probe["points"] if p["workers"] == workers]
        if len(runs) < REPEATS:  # one worker, probed once by the campaign: no fit reads its spread
            points += runs
            continue

        def run_next(k: int, workers: int = workers) -> dict[str, Any]:
            say(f"{point_dir.parent.name}/{point_dir.name}: probe, {workers} worker(s), run {k}")
            extra = one_run(point_dir / f"more-runs/extra/probe-w{workers}-r{k}", [*base, "--workers", str(workers)])
            return link_probe_of_measurement(extra, probe["download_bytes"], probe["upload_bytes"],
                                             probe["compute_s"], probe["tcp_congestion_control"])["points"][0]

        points += extend(runs, run_next)
    return {**probe, "points": points}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[0] + "\nusage: environment_more_runs.py ROOT [ENV/POINT ...]",
              file=sys.stderr)
        return 2
    root, only = Path(argv[0]), set(argv[1:])

    def say(text: str) -> None:
        print(text, flush=True)

    for point_dir in sorted(p.parent.parent for p in root.glob("*/*/measured/measured.json")):
        if only and f"{point_dir.parent.name}/{point_dir.name}" not in only:
            continue
        # the probe first: its runs are shorter, and the re-prediction needs both
        probe = more_probe_runs(point_dir, say)
        measured = more_measured_runs(point_dir, say)
        write_json_atomically(point_dir / "more-runs/link-probe.json", probe)
        write_json_atomically(point_dir / "more-runs/measured.json", measured)
        counts = {p["workers"]: len(p.get("run_steps_per_second", [1])) for p in measured["points"]}
        probed = {w: sum(1 for p in probe["points"] if p["workers"] == w) for w in sorted(counts) if w > 1}
        say(f"{point_dir.parent.name}/{point_dir.name}: runs per count {counts}, probe runs {probed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
