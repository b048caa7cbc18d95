"""The compiled kernel replays unequal workers (``--worker-speeds``, ``--slowdown``;
replay.engine.kernel.multipliers) as the reference engine does, and predictions with them run on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.order import TraceOrder
from replay.engine.slowdown import parse_slowdown
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import SHARING, ZOO_GRAPHS, assert_same_run, needs_numba
from tests.replay.engine.test_kernel_groups import GROUPS  # noqa: F401  (adds the released groups' sharing)
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel, discipline
from tracetool.graph.stepgraph import load_stepgraph

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
SLOWDOWNS = ["none", "lognormal:0.3", "exponential", "straggler:4:0.2", "persistent:3:0.1:5"]
DISCIPLINES = ["async", "ssp:1", "backup", "static:0.8", "saps:1"]
SPEEDS = (1.0, 0.25, 2.0, 0.8)
# Every slowdown with equal and unequal speeds, but for equal workers (test_kernel's).
CASES = [(slowdown, speeds) for slowdown in SLOWDOWNS for speeds in ((), SPEEDS) if slowdown != "none" or speeds]


def unequal(model: str, workers: int, sharing: str, *, deterministic: bool, slowdown: str,
            speeds: tuple[float, ...], name: str = "async", seed: int = 0, bandwidth_bps: float = 3e7,
            steps: int = 3) -> tuple:
    """The kernel's and the reference's run of unequal workers (``both``'s link and starts)."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = target_link(graph, bandwidth_bps, latency_s=0.0005, contention_efficiency=0.95)
    kwargs = dict(sharing=SHARING[sharing], order=TraceOrder(),
                  durations=DurationModel(compute_scale=1.1, deterministic=deterministic), measured_steps=steps,
                  warmup_steps=2, seed=seed, stagger_s=one_step_time_s(compiled, link, sharing=SHARING[sharing]),
                  discipline=None if name == "async" else discipline(name, model, bandwidth_bps),
                  slowdown=parse_slowdown(slowdown), worker_speeds=speeds)
    return simulate_fast(compiled, workers, link, **kwargs), simulate(compiled, workers, link, **kwargs)


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize(("slowdown", "speeds"), CASES)
def test_kernel_equals_reference_with_unequal_workers(slowdown: str, speeds: tuple, deterministic: bool):
    """Each slowdown with and without unequal speeds, mean and sampled durations, five disciplines
    on three graphs under fair, fifo, seniority and released groups (taken in turn), 4 and 7
    workers: the kernel's run is the reference's."""
    k = SLOWDOWNS.index(slowdown)
    for j, name in enumerate(DISCIPLINES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        sharing = ["fair", "fifo", "seniority", "groups-default"][(k + j) % 4]
        kernel, reference = unequal(model, 4 + 3 * (j % 2), sharing, deterministic=deterministic, slowdown=slowdown,
                                    speeds=speeds, name=name, seed=j)
        assert_same_run(kernel, reference)


@needs_numba
def test_kernel_replays_measured_step_times(tmp_path: Path):
    """``--slowdown trace:FILE.csv``: each worker's measured times, cycled, over their median."""
    csv = tmp_path / "steps.csv"
    csv.write_text("worker,step,seconds\n" + "".join(f"{w},{s},{0.1 + 0.05 * ((w * 7 + s * 3) % 5)}\n"
                                                      for w in range(5) for s in range(3)))
    for deterministic in (True, False):
        kernel, reference = unequal("inception", 5, "seniority", deterministic=deterministic,
                                    slowdown=f"trace:{csv}", speeds=(), name="sync", seed=2)
        assert_same_run(kernel, reference)


@needs_numba
def test_kernel_runs_again_when_a_worker_outlives_its_multipliers(monkeypatch):
    """A worker ten times as fast as another makes many more steps than its row of multipliers
    first holds (one here): the run is repeated with more, giving the reference's run."""
    from replay.engine.kernel import entry

    columns = []
    real = entry.step_factors

    def short_first(slowdown, speeds, workers, seed, count):
        columns.append(1 if not columns else count)
        return real(slowdown, speeds, workers, seed, columns[-1])

    monkeypatch.setattr(entry, "step_factors", short_first)
    kernel, reference = unequal("alexnet", 3, "fair", deterministic=False, slowdown="lognormal:0.5",
                                speeds=(1.0, 0.1, 1.0), steps=6)
    assert len(columns) > 1
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("words", [["--worker-speeds", "1,0.5,2"], ["--slowdown", "lognormal:0.3"],
                                   ["--slowdown", "straggler:3:0.3", "--sync", "backup"]])
def test_predict_with_unequal_workers_runs_on_the_kernel(words: list[str], tmp_path, graph_file, monkeypatch):
    """`replay predict --worker-speeds ...` or `--slowdown ...` replays on the kernel under "auto"."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)
