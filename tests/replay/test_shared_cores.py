"""Workers' compute sharing one machine's cores (replay.engine.cores), as in a local validation run.

Known answers: processor sharing of C cores among k ops, each at most one core, gives each op
min(1, C / k) of a core; on a compute-only chain (10 ms of compute, no bytes) N workers on C
cores step at min(N, C) / 10 ms in all.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from replay.engine.cores import SharedCores
from replay.engine.link import target_link
from replay.sweep import ReplaySettings, predict
from replay.synthetic import chain_graph
from tests.conftest import REPO_ROOT
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import save_stepgraph

STEP_S = 0.010


def test_three_ops_on_two_cores_each_run_at_two_thirds():
    cores = SharedCores(2)
    for node in range(3):
        cores.add(0.0, node, node, 1.0)
    assert cores.next_time() == pytest.approx(1.5)
    assert sorted(cores.pop_finished(1.5)) == [(0, 0), (1, 1), (2, 2)]
    assert cores.next_time() == float("inf")


def test_an_op_joining_later_slows_the_others_only_while_they_outnumber_the_cores():
    """One core: A (2 s of work) alone for 1 s, then with B (0.5 s) at half speed each: B ends at
    2 s, A has 0.5 s left and ends at 2.5 s."""
    cores = SharedCores(1)
    cores.add(0.0, 0, 10, 2.0)
    assert cores.add(1.0, 1, 11, 0.5) == pytest.approx(2.0)
    assert cores.pop_finished(2.0) == [(1, 11)]
    assert cores.next_time() == pytest.approx(2.5)
    assert cores.pop_finished(2.5) == [(0, 10)]


def test_ops_within_the_cores_run_at_full_speed():
    cores = SharedCores(4)
    for node in range(4):
        cores.add(0.0, node, node, 0.25 * (node + 1))
    assert [cores.pop_finished(t) for t in (0.25, 0.5, 0.75, 1.0)] == [[(0, 0)], [(1, 1)], [(2, 2)], [(3, 3)]]


def compute_only_graph():  # noqa: ANN201 - a StepGraph
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 1e9, "per_transfer_overhead_s": 0.0}
    return chain_graph(compute_us=STEP_S * 1e6, download_bytes=0, upload_bytes=0, model={"name": "chain"},
                       link_calibration=calibration)


def rate(workers: int, shared_cores: int) -> float:
    graph = compute_only_graph()
    base = {"sharing": "fair", "deterministic": True, "calibrate": False, "seeds": 1, "measured_steps": 60}
    settings = ReplaySettings(**base, shared_cores=shared_cores)
    return predict(graph, [workers], target_link(graph, 1e9, 0.0), settings).points[0].steps_per_second


@pytest.mark.parametrize("workers,cores", [(1, 1), (2, 2), (3, 2), (4, 2), (5, 1), (4, 8)])
def test_workers_on_shared_cores_step_at_the_cores_rate(workers: int, cores: int):
    assert rate(workers, cores) == pytest.approx(min(workers, cores) / STEP_S, rel=0.03)


def test_without_shared_cores_every_worker_has_its_own_machine():
    assert rate(4, 0) == pytest.approx(4 / STEP_S, rel=0.01)


def test_a_real_step_graph_slows_where_its_workers_outnumber_the_cores():
    """alexnet's traced step over a 10gbit link, where compute decides the rate (four machines
    step four times as fast as one): on two cores four workers step as fast as two machines, on
    one core as one; one worker is unchanged."""
    from replay.analytic.run import load_graph

    graph = load_graph(REPO_ROOT / "traces" / "alexnet")
    link = target_link(graph, 10e9, 0.0)

    def replay(workers: int, cores: int) -> float:
        settings = ReplaySettings(seeds=2, calibrate=False, shared_cores=cores, measured_steps=60)
        return predict(graph, [workers], link, settings).points[0].steps_per_second

    one = replay(1, 0)
    assert replay(4, 0) == pytest.approx(4 * one, rel=0.02)
    assert replay(1, 2) == pytest.approx(one, rel=1e-9)
    assert replay(4, 2) == pytest.approx(2 * one, rel=0.05)
    assert replay(4, 1) == pytest.approx(one, rel=0.05)


@pytest.mark.parametrize("extra,words", [
    (["--shared-cores", "-1"], "--shared-cores must be between 0"),
    (["--shared-cores", "2", "--sync", "cutoff", "--cutoff", "static:0.05"], "which interrupts steps"),
])
def test_shared_cores_that_cannot_be_replayed_are_refused_in_one_line(tmp_path, extra: list[str], words: str):
    graph_file = tmp_path / "graph.json"
    save_stepgraph(compute_only_graph(), graph_file)
    result = subprocess.run([sys.executable, "-m", "replay.cli", "predict", str(graph_file), "--workers", "1,2",
                             "--bandwidth", "1gbit", "--out", str(tmp_path / "out"), "--no-timelines", *extra],
                            capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert result.returncode != 0
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_settings_refuse_impossible_cores():
    from replay.sweep import check_settings

    with pytest.raises(ToolError, match="between 0"):
        check_settings(ReplaySettings(shared_cores=-2))


def test_synchronous_rounds_share_the_cores_too():
    """Sync rounds of four compute-only workers: each round waits for its slowest worker, so on two
    cores a round takes two steps' compute (both pairs' ops at half speed), where four machines
    take one."""
    graph = compute_only_graph()
    base = {"sharing": "fair", "deterministic": True, "calibrate": False, "seeds": 1, "measured_steps": 60,
            "sync": "sync"}
    link = target_link(graph, 1e9, 0.0)
    apart = predict(graph, [4], link, ReplaySettings(**base)).points[0].steps_per_second
    shared = predict(graph, [4], link, ReplaySettings(**base, shared_cores=2)).points[0].steps_per_second
    assert shared == pytest.approx(apart / 2, rel=0.05)


def test_the_ps_shares_the_cores_too():
    """10 ms of compute and a 10 ms PS update per step, four workers: on machines of their own the
    PS device bounds them at 100 steps/s; on one shared core every step's 20 ms of work queue
    there, 50 steps/s."""
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 1e9, "per_transfer_overhead_s": 0.0}
    graph = chain_graph(compute_us=10_000, ps_update_us=10_000, download_bytes=0, upload_bytes=0,
                        model={"name": "chain"}, link_calibration=calibration)
    base = {"sharing": "fair", "deterministic": True, "calibrate": False, "seeds": 1, "measured_steps": 60}
    link = target_link(graph, 1e9, 0.0)
    apart = predict(graph, [4], link, ReplaySettings(**base)).points[0].steps_per_second
    one_core = predict(graph, [4], link, ReplaySettings(**base, shared_cores=1)).points[0].steps_per_second
    assert apart == pytest.approx(100, rel=0.03)
    assert one_core == pytest.approx(50, rel=0.03)
