"""The compiled kernel replays every synchronization discipline as the reference engine does
(replay.engine.kernel.discipline), and sweeps with a discipline run on it."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

import replay.sync.cutoff as cutoff_module
from replay.cli import main
from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast, unsupported_setting
from replay.engine.link import LinkConfig, target_link
from replay.engine.loop import one_step_time_s, simulate
from replay.engine.sharing import FairSharing
from replay.sync.base import SyncDiscipline
from replay.sync.cutoff import Cutoff, CutoffRule
from replay.sync.disciplines import sync_discipline
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, both, kernel_calls, needs_numba
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]


@functools.cache
def step_s(model: str, bandwidth_bps: float) -> float:
    """One worker's step alone on the test link (``both``'s), to set cutoffs against."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    link = target_link(graph, bandwidth_bps, latency_s=0.0005, contention_efficiency=0.95)
    return 1.1 * one_step_time_s(compile_graph(graph), link, sharing=FairSharing())


def discipline(name: str, model: str, bandwidth_bps: float) -> SyncDiscipline:
    """``name`` for a run of ``model``: static cutoffs are set against its step time, so that
    rounds close with some workers cut (0.8 steps) or every worker cut (0.3 steps)."""
    kind, _, arg = name.partition(":")
    if kind in ("ssp", "saps"):
        return sync_discipline(kind, int(arg))
    if kind == "static":
        return Cutoff(CutoffRule("static", seconds=float(arg) * step_s(model, bandwidth_bps)))
    if kind in ("gradients", "dynamic"):
        return sync_discipline("cutoff", cutoff=name)
    if kind == "sync" and arg:
        return sync_discipline("sync", replicas_to_aggregate=int(arg))
    return sync_discipline(kind)


# Each discipline meets four graphs, each at another worker count and link speed (the graphs
# taken in turn, so that every graph meets every discipline family without the full product).
DISCIPLINES = ["ssp:0", "ssp:2", "sync", "sync:2", "backup", "static:0.8", "gradients:2", "saps:0", "saps:2"]
SHAPES = [(3, 1e8), (8, 3e7), (5, 1e7), (12, 1e8)]  # (workers, link bits/s)


def configs_for(name: str) -> list[tuple[str, int, float]]:
    """(graph, workers, link bits/s) of the runs of one discipline."""
    k = DISCIPLINES.index(name)
    return [(GRAPHS[(k + j) % len(GRAPHS)], *shape) for j, shape in enumerate(SHAPES)]


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("sharing", ["fair", "fifo", "seniority"])
@pytest.mark.parametrize("name", DISCIPLINES)
def test_kernel_equals_reference_under_each_discipline(name: str, sharing: str, deterministic: bool):
    """Every discipline, fair, fifo and seniority, mean and sampled durations, on four graphs at
    3 to 12 workers: the kernel's run is the reference's, field for field."""
    for model, workers, bandwidth in configs_for(name):
        kernel, reference = both(TRACES_DIR / model / "graph.json", workers, sharing, deterministic=deterministic,
                                 seed=3, bandwidth_bps=bandwidth, steps=4,
                                 discipline=discipline(name, model, bandwidth))
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("model", ["alexnet", "inception"])
def test_kernel_equals_reference_at_other_worker_counts(model: str, workers: int):
    """One worker (every discipline's degenerate case) and four, under the default sharing."""
    for name in ("ssp:0", "sync", "static:0.8", "gradients:1", "saps:1"):
        kernel, reference = both(TRACES_DIR / model / "graph.json", workers, "seniority", deterministic=False,
                                 seed=1, steps=3, discipline=discipline(name, model, 1e8))
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("sharing", ["fair", "fifo", "seniority"])
@pytest.mark.parametrize(("model", "workers", "bandwidth"), [("mlp", 8, 1e7), ("resnet", 6, 3e7)])
def test_kernel_takes_the_dynamic_cutoffs_decisions(model: str, workers: int, bandwidth: float, sharing: str,
                                                     monkeypatch):
    """The dynamic cutoff, long enough for its model to decide rounds and to censor cut workers:
    the reference decides (counted here) and the kernel's run, which calls the same model once
    per round, is the same run."""
    calls = []
    real = cutoff_module.best_cutoff

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cutoff_module, "best_cutoff", counted)
    kernel, reference = both(TRACES_DIR / model / "graph.json", workers, sharing, deterministic=False, seed=0,
                             bandwidth_bps=bandwidth, steps=12, discipline=discipline("dynamic", model, bandwidth))
    assert calls, "the reference never decided a cutoff: the run is too short to test the model"
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("sharing", ["fair", "seniority"])
def test_kernel_runs_again_when_interrupted_work_piles_up(sharing: str, monkeypatch):
    """Rounds far shorter than a step on a slow link: every step is cut, zombie transfers and
    abandoned events pile up past the room first given, and the run is repeated with more,
    giving the reference's run."""
    from replay.engine.kernel import entry

    rooms = []
    real = entry._replay

    def recorded(*args):
        rooms.append(args[-2:])  # the heap's and the link's slack
        return real(*args)

    monkeypatch.setattr(entry, "_replay", recorded)
    kernel, reference = both(TRACES_DIR / "vgg" / "graph.json", 6, sharing, deterministic=False, seed=2,
                             bandwidth_bps=1e7, steps=3, discipline=discipline("static:0.05", "vgg", 1e7))
    assert len(rooms) > 1
    assert_same_run(kernel, reference)


@needs_numba
def test_kernel_runs_again_when_its_heap_is_full(monkeypatch):
    """A first run given no room in its heap says so and is repeated with room (the path a run
    whose interrupted steps leave too many events behind takes)."""
    from replay.engine.kernel import entry

    heap_slacks = []
    real = entry._replay

    def first_without_room(*args):
        heap_slacks.append(0 if not heap_slacks else max(1, args[-2]))
        return real(*args[:-2], heap_slacks[-1], args[-1])

    monkeypatch.setattr(entry, "_replay", first_without_room)
    kernel, reference = both(TRACES_DIR / "mlp" / "graph.json", 3, "fifo", deterministic=False,
                             discipline=sync_discipline("cutoff", cutoff="gradients:2"))
    assert heap_slacks[0] == 0 and len(heap_slacks) == 2
    assert_same_run(kernel, reference)


@needs_numba
def test_kernel_runs_again_when_staleness_outgrows_its_histogram(monkeypatch):
    """A staleness value past the histogram's end repeats the run with a longer one."""
    from replay.engine.kernel import entry

    monkeypatch.setattr(entry, "_histogram_size", lambda workers: 1)
    kernel, reference = both(TRACES_DIR / "alexnet" / "graph.json", 4, "fair", deterministic=False, seed=4,
                             discipline=sync_discipline("saps", 3))
    assert reference.staleness_max > 0
    assert_same_run(kernel, reference)


def test_kernel_holds_every_discipline():
    """No discipline keeps a replay off the kernel any more."""
    for words in (("ssp", 1, None, None), ("sync", None, 2, None), ("backup", None, None, None),
                  ("cutoff", None, None, "static:0.1"), ("cutoff", None, None, "gradients:2"),
                  ("cutoff", None, None, "dynamic"), ("saps", 3, None, None)):
        assert unsupported_setting(discipline=sync_discipline(*words)) is None


@needs_numba
def test_kernel_refuses_what_the_discipline_refuses():
    """A setting the reference's discipline refuses (R above N) is the same one-line error on the kernel."""
    compiled = compile_graph(load_stepgraph(TRACES_DIR / "mlp" / "graph.json"))
    for engine in (simulate, simulate_fast):
        with pytest.raises(ToolError, match="--replicas-to-aggregate 5 is above the 3 workers"):
            engine(compiled, 3, LinkConfig(1e9, 1e9), discipline=sync_discipline("sync", None, 5, None))


@needs_numba
@pytest.mark.parametrize("words", [["--sync", "ssp", "--staleness", "1"],
                                   ["--sync", "sync", "--sharing", "fair"],
                                   ["--sync", "cutoff", "--cutoff", "dynamic", "--sharing", "fifo"],
                                   ["--sync", "saps", "--staleness", "2"],
                                   ["--sync", "backup", "--join-window", "0"]])
def test_predict_with_a_discipline_runs_on_the_kernel(words: list[str], tmp_path: Path, graph_file: Path,
                                                      monkeypatch):
    """`replay predict --sync ...` under the default engine ("auto") replays on the kernel, and
    predicts what the Python engine predicts (backup here under plain seniority, its released
    groups switched off; test_kernel_groups runs them)."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)


def assert_predicts_on_the_kernel(words: list[str], tmp_path: Path, graph_file: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`replay predict ... words` for 1 and 3 workers replays both on the kernel under "auto" and
    predicts what `--engine python` predicts."""
    calls = kernel_calls(monkeypatch)
    common = ["predict", str(graph_file), "--workers", "1,3", "--bandwidth", "100mbit", "--steps", "4", "--seeds",
              "1", "--jobs", "1", "--no-timelines", *words]
    assert main([*common, "--out", str(tmp_path / "auto")]) == 0
    assert sorted(set(calls)) == [1, 3]
    assert main([*common, "--engine", "python", "--out", str(tmp_path / "python")]) == 0
    auto = (tmp_path / "auto" / "prediction.json").read_text()
    python = (tmp_path / "python" / "prediction.json").read_text()
    assert _rates(auto) == pytest.approx(_rates(python), rel=1e-9)


def _rates(prediction_json: str) -> list[float]:
    """Each point's rates and waits, as the prediction writes them."""
    keys = ("steps_per_second", "updates_per_second", "gradients_applied_per_second", "gradients_dropped_per_second",
            "waiting_for_peers_s", "staleness_mean", "simulated_ops")
    return [float(p[key]) for p in json.loads(prediction_json)["points"] for key in keys]
