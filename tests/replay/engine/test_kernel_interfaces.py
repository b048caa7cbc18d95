"""The compiled kernel replays unequal worker interfaces (``--worker-bandwidths``: each worker's
cap in the fifo link and the weighted water-filling, replay.engine.kernel.group_link) as the
reference engine does, and predictions with them run on it."""

from __future__ import annotations

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast, unsupported_setting
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.order import TraceOrder
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import SHARING, ZOO_GRAPHS, assert_same_run, needs_numba
from tests.replay.engine.test_kernel_groups import GROUPS  # noqa: F401  (adds the released groups' sharing)
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel, discipline
from tracetool.graph.stepgraph import load_stepgraph

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
SHARINGS = ["fair", "fifo", "seniority", "seniority-always-overtaking", "groups-default", "groups-heavy-leader"]
DISCIPLINES = ["async", "sync", "static:0.8", "saps:1"]
# The first workers' interfaces (bits/s); the rest have the link's default.
INTERFACES = {"slow-few": (2e7, 1e8, 5e6), "fast-and-slow": (1e9, 1e7)}


def run_both(model: str, workers: int, sharing: str, interfaces: tuple[float, ...], *, deterministic: bool,
             name: str, seed: int) -> tuple:
    """The kernel's and the reference's run on a 100 Mbit/s link with these worker interfaces."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = target_link(graph, 1e8, latency_s=0.0005, contention_efficiency=0.95, worker_bandwidths_bps=interfaces)
    kwargs = dict(sharing=SHARING[sharing], order=TraceOrder(),
                  durations=DurationModel(compute_scale=1.1, deterministic=deterministic), measured_steps=3,
                  warmup_steps=2, seed=seed, stagger_s=one_step_time_s(compiled, link, sharing=SHARING[sharing]),
                  discipline=None if name == "async" else discipline(name, model, 1e8))
    return simulate_fast(compiled, workers, link, **kwargs), simulate(compiled, workers, link, **kwargs)


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("interfaces", list(INTERFACES))
@pytest.mark.parametrize("sharing", SHARINGS)
def test_kernel_equals_reference_with_unequal_interfaces(sharing: str, interfaces: str, deterministic: bool):
    """fair (weight 1 under each cap), fifo, seniority (with and without overtakes) and released
    groups, two sets of interfaces, mean and sampled durations, four disciplines on graphs taken in
    turn at 2 to 6 workers: the kernel's run is the reference's."""
    k = SHARINGS.index(sharing)
    for j, name in enumerate(DISCIPLINES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = run_both(model, 2 + 2 * (j % 3), sharing, INTERFACES[interfaces],
                                     deterministic=deterministic, name=name, seed=j)
        assert_same_run(kernel, reference)


def test_kernel_holds_unequal_interfaces():
    """No sharing model keeps unequal interfaces off the kernel: it refuses by policy type alone
    (the replays themselves are compared above; one direction only: test_kernel_directions)."""
    for sharing in (None, SHARING["fair"], SHARING["fifo"], SHARING["seniority"]):
        assert unsupported_setting(sharing=sharing) is None


@needs_numba
@pytest.mark.parametrize("words", [["--worker-bandwidths", "10mbit,100mbit"],
                                   ["--worker-bandwidths", "10mbit", "--sharing", "fair", "--sync", "sync"]])
def test_predict_with_unequal_interfaces_runs_on_the_kernel(words: list[str], tmp_path, graph_file, monkeypatch):
    """`replay predict --worker-bandwidths ...` replays on the kernel under "auto"."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)
