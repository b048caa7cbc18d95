"""The compiled kernel records a run's first steps (``record_steps``; replay.engine.kernel.timeline)
as the reference engine does, so `replay predict`'s synthetic timelines replay on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replay.sweep as sweep
from replay.cli import main
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, both, needs_numba
from tests.replay.engine.test_kernel_groups import GROUPS  # noqa: F401  (adds the released groups' sharing)
from tests.replay.engine.test_kernel_sync import discipline

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
DISCIPLINES = ["async", "sync:2", "backup", "static:0.8", "saps:0"]
SHARINGS = ["fair", "fifo", "seniority", "groups-default"]


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("sharing", SHARINGS)
@pytest.mark.parametrize("name", DISCIPLINES)
def test_kernel_records_the_reference_timeline(name: str, sharing: str, deterministic: bool):
    """Each discipline (steps applied, dropped and aborted) under fair, fifo, seniority and
    released groups, mean and sampled durations, on two graphs at 3 and 6 workers: the record
    (ops, transfers with their admission, steps with their outcome) is the reference's, to the
    bit, and so is every other field."""
    k = DISCIPLINES.index(name) + SHARINGS.index(sharing)
    for j, (workers, bandwidth) in enumerate([(3, 1e8), (6, 2e7)]):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = both(TRACES_DIR / model / "graph.json", workers, sharing, deterministic=deterministic,
                                 seed=j, bandwidth_bps=bandwidth, steps=4, record_steps=2 + j,
                                 discipline=None if name == "async" else discipline(name, model, bandwidth))
        assert reference.timeline is not None and reference.timeline.steps
        assert kernel.timeline == reference.timeline
        assert_same_run(kernel, reference)


@needs_numba
def test_kernel_records_every_outcome():
    """The outcomes the record tells apart all occur in these runs (backup drops its late
    gradients, a cutoff at 0.3 steps interrupts), and the kernel names them as the reference does."""
    outcomes = set()
    for name in ("backup", "static:0.3"):
        kernel, reference = both(TRACES_DIR / "alexnet" / "graph.json", 6, "fifo", deterministic=False, seed=1,
                                 bandwidth_bps=2e7, steps=4, record_steps=4,
                                 discipline=discipline(name, "alexnet", 2e7))
        assert kernel.timeline == reference.timeline
        outcomes |= {step[4] for step in kernel.timeline.steps}
    assert outcomes == {"applied", "dropped", "aborted"}


@needs_numba
def test_predict_writes_its_timelines_from_the_kernel(tmp_path: Path, graph_file: Path, monkeypatch):
    """`replay predict` with timelines under "auto" records them on the kernel, and writes the
    timeline files the Python engine writes, byte for byte."""
    recorded = []
    real = sweep.simulate_fast

    def counted(*args, **kwargs):
        if kwargs.get("record_steps"):
            recorded.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "simulate_fast", counted)
    common = ["predict", str(graph_file), "--workers", "1,3", "--bandwidth", "100mbit", "--steps", "4", "--seeds",
              "1", "--jobs", "1", "--sync", "sync"]
    assert main([*common, "--out", str(tmp_path / "auto")]) == 0
    assert sorted(recorded) == [1, 3]
    assert main([*common, "--engine", "python", "--out", str(tmp_path / "python")]) == 0
    for n in (1, 3):
        auto = json.loads((tmp_path / "auto" / f"timeline-{n}.json").read_text())
        python = json.loads((tmp_path / "python" / f"timeline-{n}.json").read_text())
        assert auto == python
