"""Released groups: connections that join a direction together share it nearly fairly, the first
joiner a little ahead, and groups keep seniority among themselves (replay.engine.sharing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay import ReplaySettings, predict
from replay.cli import main
from replay.engine.link import LinkConfig
from replay.engine.sharing import DEFAULT_JOIN_WINDOW_S, DEFAULT_LEADER_WEIGHT, SenioritySharing, sharing_model
from replay.sweep import released_groups
from tests.replay.test_replay_sharing import drain
from tracetool.graph.stepgraph import load_stepgraph


def test_a_released_group_shares_by_weight_and_the_others_share_equally_once_the_leader_leaves():
    """Three equal transfers joining together, leader weight 1.5: the leader gets 1.5/3.5 of the link
    until it finishes at 100 / (150/3.5) s; the other two then split the link equally."""
    link = SenioritySharing(2.0, join_window_s=0.01, leader_weight=1.5).new_upload_link(150.0, 150.0, 3)
    finished = drain(link, [(0.0, 0, 0, 100.0), (0.001, 1, 0, 100.0), (0.002, 2, 0, 100.0)])
    # the leader alone for 1 ms, with one member for 1 ms, then all three: solve by the bits left
    t = 0.002
    left = [100.0 - 0.15 - 150.0 * 1.5 / 2.5 * 0.001, 100.0 - 150.0 / 2.5 * 0.001, 100.0]
    leader_end = t + left[0] / (150.0 * 1.5 / 3.5)
    member_left = [left[1] - 150.0 / 3.5 * (leader_end - t), left[2] - 150.0 / 3.5 * (leader_end - t)]
    assert finished[(0, 0)] == pytest.approx(leader_end)
    # the two members, equal weights: the one with fewer bits left ends first, the other then alone
    first_end = leader_end + member_left[0] / 75.0
    assert finished[(1, 0)] == pytest.approx(first_end)
    assert finished[(2, 0)] == pytest.approx(first_end + (member_left[1] - member_left[0]) / 150.0)
    assert max(finished.values()) == pytest.approx(2.0)  # the link never idled: 300 bits at 150 bits/s


def test_a_connection_joining_after_the_window_is_a_younger_group():
    """Joining 0.5 s after a group opened, past a 0.1 s window: seniority 3 gives the older one 3/4,
    exactly as plain seniority does."""
    grouped = drain(SenioritySharing(3.0, join_window_s=0.1, leader_weight=1.5).new_upload_link(100.0, 100.0, 2),
                    [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    plain = drain(SenioritySharing(3.0).new_upload_link(100.0, 100.0, 2), [(0.0, 0, 0, 100.0), (0.5, 1, 0, 100.0)])
    assert grouped == pytest.approx(plain)
    assert grouped[(0, 0)] == pytest.approx(0.5 + 50.0 / 75.0)


def test_members_of_an_older_group_outweigh_a_younger_group():
    """Two connections joining together (leader weight 1) against one joining later (seniority 2):
    weights 1, 1 and 1/2 give the group 40 bits/s each and the younger one 20."""
    link = SenioritySharing(2.0, join_window_s=0.1, leader_weight=1.0).new_download_link(100.0, 100.0, 3)
    finished = drain(link, [(0.0, 0, 0, 90.0), (0.0, 1, 0, 90.0), (0.5, 2, 0, 90.0)])
    # until 0.5 s the pair gets 50 each (25 bits), then 40 each for their last 65 bits
    assert finished[(0, 0)] == pytest.approx(0.5 + 65.0 / 40.0)
    assert finished[(1, 0)] == pytest.approx(finished[(0, 0)])
    assert finished[(2, 0)] == pytest.approx(finished[(0, 0)] + (90.0 - 20.0 * 65.0 / 40.0) / 100.0)


def test_a_released_group_respects_unequal_worker_interfaces():
    """The leader capped at 20 bits/s leaves the other member the remaining 80, not its weight's share."""
    link = SenioritySharing(2.0, join_window_s=0.1, leader_weight=3.0).new_upload_link(100.0, [20.0, 100.0], 2)
    finished = drain(link, [(0.0, 0, 0, 20.0), (0.0, 1, 0, 80.0)])
    assert finished[(0, 0)] == pytest.approx(1.0) and finished[(1, 0)] == pytest.approx(1.0)


def test_sync_disciplines_use_released_groups_by_default_and_async_does_not():
    for sync in ("sync", "backup"):
        assert released_groups(ReplaySettings(sync=sync)) == (DEFAULT_JOIN_WINDOW_S, DEFAULT_LEADER_WEIGHT)
    assert released_groups(ReplaySettings(sync="cutoff", cutoff="static:1")) == (DEFAULT_JOIN_WINDOW_S,
                                                                                DEFAULT_LEADER_WEIGHT)
    for sync, extra in (("async", {}), ("ssp", {"staleness": 2}), ("saps", {"staleness": 2})):
        assert released_groups(ReplaySettings(sync=sync, **extra)) == (None, None)
    assert released_groups(ReplaySettings(sync="sync", join_window_s=0.0)) == (0.0, DEFAULT_LEADER_WEIGHT)
    assert released_groups(ReplaySettings(sync="sync", sharing="fair")) == (None, None)


def test_async_predictions_do_not_change_and_sync_predictions_record_the_groups(graph_file: Path):
    """Async replays are those of plain seniority to the bit; a sync prediction writes the window
    and leader weight it used, and setting the window to 0 gives plain seniority back."""
    graph = load_stepgraph(graph_file)
    link = LinkConfig(download_bandwidth_bps=2e7, upload_bandwidth_bps=2e7)
    base = ReplaySettings(seeds=2, measured_steps=20)
    explicit = predict(graph, [3], link, ReplaySettings(seeds=2, measured_steps=20, join_window_s=0.0)).points
    assert predict(graph, [3], link, base).points[0].steps_per_second == explicit[0].steps_per_second
    sync = predict(graph, [3], link, ReplaySettings(seeds=2, measured_steps=20, sync="sync"))
    assert (sync.settings.join_window_s, sync.settings.leader_weight) == (DEFAULT_JOIN_WINDOW_S, DEFAULT_LEADER_WEIGHT)
    plain = predict(graph, [3], link, ReplaySettings(seeds=2, measured_steps=20, sync="sync", join_window_s=0.0))
    assert plain.settings.join_window_s == 0.0
    assert sync.points[0].updates_per_second != plain.points[0].updates_per_second


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_impossible_join_window_is_refused(bad: float):
    with pytest.raises(ValueError, match="--join-window"):
        SenioritySharing(2.0, join_window_s=bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_impossible_leader_weight_is_refused(bad: float):
    with pytest.raises(ValueError, match="--leader-weight"):
        SenioritySharing(2.0, join_window_s=0.1, leader_weight=bad)


def test_released_groups_with_another_sharing_model_are_refused():
    with pytest.raises(ValueError, match="--join-window applies to --sharing seniority only"):
        sharing_model("fair", join_window_s=0.5)
    with pytest.raises(ValueError, match="--leader-weight applies to --sharing seniority only"):
        sharing_model("fifo", leader_weight=1.5)


def test_the_cli_writes_the_released_groups_it_used(tmp_path: Path, graph_file: Path, capsys):
    out = tmp_path / "out"
    assert main(["predict", str(graph_file), "--workers", "2", "--bandwidth", "100mbit", "--sync", "sync",
                 "--leader-weight", "2", "--seeds", "1", "--steps", "5", "--out", str(out)]) == 0
    settings = json.loads((out / "prediction.json").read_text())["settings"]
    assert settings["join_window_s"] == DEFAULT_JOIN_WINDOW_S and settings["leader_weight"] == 2.0
    assert "overtake draws" not in settings["varies_with_seed"]
