"""Unequal workers: per-worker speeds and per-step slowdowns scale each worker's compute.

Known answers on a compute-only chain (10 ms of compute, no bytes, no transfer overhead), where
a worker's rate is 1 / (10 ms x its mean multiplier) and workers do not interact.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replay.engine.link import target_link
from replay.engine.slowdown import SlowdownSpec, StepMultipliers, parse_slowdown
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph
from tests.conftest import REPO_ROOT
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import save_stepgraph

STEP_S = 0.010


def compute_only_graph():  # noqa: ANN201 - a StepGraph
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 1e9, "per_transfer_overhead_s": 0.0}
    return chain_graph(compute_us=STEP_S * 1e6, download_bytes=0, upload_bytes=0, model={"name": "chain"},
                       link_calibration=calibration)


def rate(workers: int, steps: int = 40, **settings: object) -> float:
    graph = compute_only_graph()
    link = target_link(graph, 1e9, 0.0)
    base = {"sharing": "fair", "deterministic": True, "calibrate": False, "seeds": 1, "measured_steps": steps}
    return predict(graph, [workers], link, ReplaySettings(**{**base, **settings})).points[0].steps_per_second


def test_equal_workers_are_unchanged_by_neutral_settings():
    """Speeds of 1 and a slowdown of sigma 0 replay exactly what no setting replays."""
    plain = rate(3)
    assert rate(3, worker_speeds=(1.0, 1.0, 1.0)) == plain
    assert rate(3, slowdown="lognormal:0") == plain
    assert plain == pytest.approx(3 / STEP_S, rel=1e-9)


def test_a_half_speed_worker_does_half_the_steps():
    """Two workers at speeds 1 and 0.5 make 100 + 50 steps/s."""
    assert rate(2, worker_speeds=(1.0, 0.5)) == pytest.approx(1 / STEP_S + 0.5 / STEP_S, rel=1e-6)


def test_speeds_cover_the_first_workers_only():
    """A speed list shorter than the worker count leaves the rest at the profiled speed."""
    assert rate(4, worker_speeds=(0.5,)) == pytest.approx(3.5 / STEP_S, rel=1e-6)


@pytest.mark.parametrize("spec,mean_multiplier,tolerance", [
    ("straggler:3:0.25", 1.5, 0.03),
    ("lognormal:0.3", 1.0, 0.03),
    ("persistent:3:0.05:10", 1.0 + (0.05 / 0.15) * 2, 0.06),
])
def test_slowdowns_slow_a_worker_by_their_mean(spec: str, mean_multiplier: float, tolerance: float):
    """One worker's long-run rate is the profiled rate over the slowdown's mean multiplier."""
    assert parse_slowdown(spec).mean_multiplier == pytest.approx(mean_multiplier)
    assert rate(1, steps=6000, slowdown=spec) == pytest.approx(1 / (STEP_S * mean_multiplier), rel=tolerance)


def test_persistent_slowdowns_come_in_periods():
    """Slow periods last STEPS steps on average, and the slow share is P / (P + 1/STEPS)."""
    multipliers = StepMultipliers(parse_slowdown("persistent:4:0.02:25"), (), 1, seed=3)
    draws = [multipliers.next(0) for _ in range(100_000)]
    slow = [d == 4.0 for d in draws]
    periods = sum(1 for a, b in zip([False, *slow], slow, strict=False) if b and not a)
    assert sum(slow) / len(slow) == pytest.approx(0.02 / (0.02 + 0.04), rel=0.1)
    assert sum(slow) / periods == pytest.approx(25, rel=0.1)


def test_slowdown_draws_do_not_disturb_the_other_random_streams():
    """A seeded replay with a slowdown draws its slowdowns from a stream of its own: worker 0's
    multipliers are the same whatever the number of workers."""
    spec = parse_slowdown("straggler:2:0.3")
    two, four = StepMultipliers(spec, (), 2, seed=7), StepMultipliers(spec, (), 4, seed=7)
    assert [two.next(0) for _ in range(50)] == [four.next(0) for _ in range(50)]


def write_csv(path: Path, rows: list[tuple[int, int, float]]) -> Path:
    path.write_text("worker,step,seconds\n" + "".join(f"{w},{k},{s}\n" for w, k, s in rows))
    return path


def test_trace_driven_workers_replay_their_measured_step_times(tmp_path: Path):
    """Worker 0 measured 0.1, 0.1, 0.2, 0.1 s and worker 1 0.1 s: worker 0's steps take 1, 1, 2, 1 times
    the profiled compute (the median is 0.1), so the pair makes 80 + 100 steps/s."""
    csv = write_csv(tmp_path / "times.csv", [(0, k, s) for k, s in enumerate((0.1, 0.1, 0.2, 0.1))]
                    + [(1, k, 0.1) for k in range(4)])
    assert parse_slowdown(f"trace:{csv}").mean_multiplier == pytest.approx(0.9 / 8 / 0.1)  # mean over median
    assert rate(2, steps=400, slowdown=f"trace:{csv}") == pytest.approx(1 / (STEP_S * 1.25) + 1 / STEP_S, rel=0.02)


def test_a_trace_must_cover_every_worker(tmp_path: Path):
    """A step-times file with a gap in its workers, or fewer workers than replayed, is refused."""
    gap = write_csv(tmp_path / "gap.csv", [(0, 0, 0.1), (2, 0, 0.1)])
    with pytest.raises(ToolError, match="worker\\(s\\) 1"):
        parse_slowdown(f"trace:{gap}")
    one = write_csv(tmp_path / "one.csv", [(0, 0, 0.1)])
    with pytest.raises(ToolError, match="1 workers"):
        rate(2, slowdown=f"trace:{one}")


@pytest.mark.parametrize("args,words", [
    (("--slowdown", "straggler:0.5:0.1"), ("K",)),
    (("--slowdown", "straggler:2"), ("straggler:K:P",)),
    (("--slowdown", "psychic:1"), ("unknown kind",)),
    (("--slowdown", "lognormal:nan"), ("finite",)),
    (("--slowdown", "trace:/nonexistent.csv"), ("does not exist",)),
    (("--worker-speeds", "1,0"), ("--worker-speeds",)),
    (("--worker-speeds", "1,fast"), ("--worker-speeds",)),
])
def test_bad_unequal_worker_options_are_one_line(tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]):
    """Impossible speeds and slowdowns are refused in one line before anything is replayed."""
    graph = tmp_path / "g.json"
    save_stepgraph(compute_only_graph(), graph)
    result = subprocess.run([sys.executable, "-m", "replay.cli", "predict", str(graph), "--bandwidth", "1gbit",
                             *args, "--out", str(tmp_path / "p")], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=120)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert not (tmp_path / "p").exists()


def test_describe_round_trips_the_spec():
    """A spec is recorded as it was given, so prediction.json says which slowdown was replayed."""
    for text in ("none", "lognormal:0.3", "straggler:4:0.05", "persistent:3:0.02:20"):
        assert parse_slowdown(text).describe() == text
    assert SlowdownSpec().describe() == "none"
