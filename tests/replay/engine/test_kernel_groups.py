"""The compiled kernel replays seniority sharing's released groups (``--join-window``,
``--leader-weight``; replay.engine.kernel.group_link) as the reference engine does, and the
sweeps whose discipline releases workers together, which get them by default, run on it."""

from __future__ import annotations

import pytest

from replay.engine.kernel import unsupported_setting
from replay.engine.sharing import DEFAULT_JOIN_WINDOW_S, DEFAULT_LEADER_WEIGHT, SenioritySharing
from replay.sync.disciplines import sync_discipline
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import SHARING, ZOO_GRAPHS, assert_same_run, both, needs_numba
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel, discipline

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
# The measured defaults, a leader lighter than its group, and one heavier than the group before
# its own (the water-filling's order is then not the age order).
GROUPS = {"default": (DEFAULT_JOIN_WINDOW_S, DEFAULT_LEADER_WEIGHT), "light-leader": (0.05, 0.5),
          "heavy-leader": (2.0, 3.0)}
for _name, (_window, _leader) in GROUPS.items():
    SHARING[f"groups-{_name}"] = SenioritySharing(seniority=2.0, join_window_s=_window, leader_weight=_leader)
DISCIPLINES = ["async", "sync", "backup", "static:0.8", "saps:1"]
SHAPES = [(3, 1e8), (7, 3e7), (12, 1e7)]  # (workers, link bits/s)


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("groups", list(GROUPS))
@pytest.mark.parametrize("name", DISCIPLINES)
def test_kernel_equals_reference_with_released_groups(name: str, groups: str, deterministic: bool):
    """Each discipline with three join windows and leader weights, mean and sampled durations, on
    three graphs (taken in turn) at 3 to 12 workers: the kernel's run is the reference's."""
    k = DISCIPLINES.index(name) + list(GROUPS).index(groups)
    for j, (workers, bandwidth) in enumerate(SHAPES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = both(TRACES_DIR / model / "graph.json", workers, f"groups-{groups}",
                                 deterministic=deterministic, seed=j, bandwidth_bps=bandwidth, steps=3,
                                 discipline=None if name == "async" else discipline(name, model, bandwidth))
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("workers", [1, 32])
def test_kernel_equals_reference_with_released_groups_at_other_worker_counts(workers: int):
    """One worker (one group at a time) and 32 (many groups on a saturated link), synchronous."""
    kernel, reference = both(TRACES_DIR / "inception" / "graph.json", workers, "groups-default",
                             deterministic=False, seed=5, steps=2, discipline=sync_discipline("sync"))
    assert_same_run(kernel, reference)


def test_kernel_holds_released_groups():
    """A join window does not keep a replay off the kernel, with or without fair downloads."""
    assert unsupported_setting(sharing=SenioritySharing(join_window_s=0.5, leader_weight=2.0)) is None
    assert unsupported_setting(sharing=SenioritySharing(join_window_s=0.5, fair_downloads=True)) is None


@needs_numba
@pytest.mark.parametrize("words", [["--sync", "sync"], ["--sync", "backup"],
                                   ["--sync", "cutoff", "--cutoff", "gradients:1"],
                                   ["--join-window", "0.2", "--leader-weight", "2"]])
def test_predict_with_released_groups_runs_on_the_kernel(words: list[str], tmp_path, graph_file, monkeypatch):
    """`replay predict` with released groups (sync, backup and cutoff get them by default under
    seniority sharing) replays on the kernel under "auto" and predicts what the Python engine does."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)
