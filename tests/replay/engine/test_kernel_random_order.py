"""The compiled kernel replays ``--order random`` under ``fifo`` sharing (ranks from the
reference's Python generator, drawn before the run; replay.engine.kernel.entry) as the reference does."""

from __future__ import annotations

import pytest

from replay.engine.kernel import unsupported_setting
from replay.engine.order import RandomOrder
from replay.engine.sharing import FifoSharing
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, both, needs_numba
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel, discipline

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
DISCIPLINES = ["async", "sync", "static:0.8", "saps:1"]


@needs_numba
@pytest.mark.parametrize("graph", GRAPHS)
def test_kernel_equals_reference_with_random_fifo_order(graph: str):
    """Every zoo graph, four disciplines, mean and sampled durations, 3 and 7 workers."""
    runs = [(name, deterministic, j, workers) for name in DISCIPLINES for deterministic in (True, False)
            for j, workers in enumerate((3, 7))]
    for name, deterministic, seed, workers in runs:
        kernel, reference = both(TRACES_DIR / graph / "graph.json", workers, "fifo", deterministic=deterministic,
                                 seed=seed, order=RandomOrder(), bandwidth_bps=3e7,
                                 discipline=None if name == "async" else discipline(name, graph, 3e7))
        assert_same_run(kernel, reference)


@needs_numba
def test_kernel_runs_again_when_it_runs_out_of_ranks(monkeypatch):
    """A first run given no ranks says so and is repeated with them, giving the reference's run."""
    from replay.engine.kernel import entry

    counts = []
    real = entry._rank_draws

    def none_first(order_seed, count):
        counts.append(count)
        return real(order_seed, 1 if len(counts) == 1 else count)

    monkeypatch.setattr(entry, "_rank_draws", none_first)
    kernel, reference = both(TRACES_DIR / "alexnet" / "graph.json", 4, "fifo", deterministic=False,
                             order=RandomOrder())
    assert len(counts) == 2
    assert_same_run(kernel, reference)


def test_kernel_holds_random_fifo_order():
    assert unsupported_setting(sharing=FifoSharing(), order=RandomOrder()) is None


@needs_numba
def test_predict_with_random_fifo_order_runs_on_the_kernel(tmp_path, graph_file, monkeypatch):
    assert_predicts_on_the_kernel(["--sharing", "fifo", "--order", "random"], tmp_path, graph_file, monkeypatch)
