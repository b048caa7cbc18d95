"""``replay sweep``: a grid of replays as joblib tasks, on local processes or a Dask cluster (replay.grid)."""

from __future__ import annotations

import csv
import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

from replay.compare import parse_discipline_list
from replay.engine.link import target_link
from replay.grid import COLUMNS, SweepRequest, run_grid
from replay.sweep import ReplaySettings, predict
from tests.conftest import REPO_ROOT
from tests.replay.test_replay_cli import assert_one_line_error, run_replay
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph

MLP = REPO_ROOT / "traces" / "mlp" / "graph.json"
ALEXNET = REPO_ROOT / "traces" / "alexnet" / "graph.json"
SETTINGS = ReplaySettings(seeds=2, measured_steps=10, jobs=1)


def request(out: Path, **changes: object) -> SweepRequest:
    base = SweepRequest(
        graphs=[MLP], bandwidths_bps=[100e6], disciplines=[("async", SETTINGS)], workers=[1, 3], link={},
        out_dir=out, jobs=1)
    return replace(base, **changes)


def test_every_cell_is_the_replay_predict_runs_for_that_seed(tmp_path: Path):
    """A cell's steps/s is, to the bit, what 'replay predict' gets for that worker count and seed."""
    outcome = run_grid(request(tmp_path / "sweep"), progress=False)
    graph = load_stepgraph(MLP)
    prediction = predict(graph, [1, 3], target_link(graph, 100e6), SETTINGS)
    for point in prediction.points:
        rates = sorted(r["steps_per_second"] for r in outcome.rows if r["workers"] == point.workers)
        assert rates == sorted([point.steps_per_second_min, point.steps_per_second_max])


def test_the_grid_has_one_row_per_cell_in_csv_and_json(tmp_path: Path):
    """Graphs x bandwidths x disciplines x workers x seeds rows, in grid order, the same in both files."""
    base = replace(SETTINGS, sync="async")
    disciplines = [(v.label, v.settings) for v in parse_discipline_list("async,sync,ssp:1", base, None, None, None)]
    out = tmp_path / "sweep"
    outcome = run_grid(request(out, graphs=[MLP, ALEXNET], bandwidths_bps=[50e6, 1e9], disciplines=disciplines,
                               workers=[1, 2, 4]), progress=False)
    assert len(outcome.rows) == 2 * 2 * 3 * 3 * 2
    cells = {(r["model"], r["bandwidth_bps"], r["discipline"], r["workers"], r["seed"]) for r in outcome.rows}
    assert len(cells) == len(outcome.rows)
    assert {c[2] for c in cells} == {"async", "sync", "ssp:1"}
    with open(out / "sweep.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == list(COLUMNS)
    document = json.loads((out / "sweep.json").read_text())
    assert [r["steps_per_second"] for r in document["rows"]] == [float(r["steps_per_second"]) for r in table]
    first_case = [(r["model"], r["workers"]) for r in table[:6]]
    assert first_case == [("mlp", "1")] * 2 + [("mlp", "2")] * 2 + [("mlp", "4")] * 2
    # A faster link never slows the same cell, and two async workers beat one on mlp at 50mbit.
    by_cell = {(r["model"], r["bandwidth_bps"], r["discipline"], r["workers"], r["seed"]): r["steps_per_second"]
               for r in outcome.rows}
    for (model, bandwidth, discipline, workers, seed), rate in by_cell.items():
        if bandwidth == 50e6:
            assert by_cell[(model, 1e9, discipline, workers, seed)] >= rate * 0.999
    assert by_cell[("mlp", 50e6, "async", 2, 0)] > 1.5 * by_cell[("mlp", 50e6, "async", 1, 0)]


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="the dask extra is not installed")
def test_a_dask_cluster_gives_the_same_rows_as_local_processes(tmp_path: Path):
    """The same cells on a Dask LocalCluster of two worker processes: identical results."""
    local = run_grid(request(tmp_path / "local", jobs=2), progress=False)
    dask = run_grid(request(tmp_path / "dask", jobs=2, backend="dask"), progress=False)
    keep = [c for c in COLUMNS if c != "wall_time_s"]
    assert [[r[c] for c in keep] for r in dask.rows] == [[r[c] for c in keep] for r in local.rows]


def test_ray_without_its_extra_is_refused_in_one_line(tmp_path: Path):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed here")
    with pytest.raises(ToolError, match=r"pip install 'tfsim\[ray\]'"):
        run_grid(request(tmp_path / "sweep", backend="ray"), progress=False)
    assert not (tmp_path / "sweep").exists()


def test_bad_input_is_refused_before_anything_runs(tmp_path: Path):
    """An unknown discipline, a missing graph and a foreign output folder: one line each, nothing written."""
    out = tmp_path / "sweep"
    assert_one_line_error(run_replay("sweep", str(MLP), "--bandwidth", "1gbit", "--sync", "async,gossip",
                                     "--out", str(out)), "gossip")
    assert_one_line_error(run_replay("sweep", str(MLP), str(tmp_path / "nope.json"), "--bandwidth", "1gbit",
                                     "--out", str(out)), "does not exist")
    assert_one_line_error(run_replay("sweep", str(MLP), "--bandwidth", "1gbit,fast", "--out", str(out)), "fast")
    assert not out.exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert_one_line_error(run_replay("sweep", str(MLP), "--bandwidth", "1gbit", "--out", str(foreign)))
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_the_command_writes_the_table_and_prints_the_summary(tmp_path: Path):
    out = tmp_path / "sweep"
    result = run_replay("sweep", str(MLP), "--bandwidth", "100mbit,1gbit", "--workers", "1,2", "--seeds", "1",
                        "--steps", "10", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "steps/s" in result.stdout and "1000M" in result.stdout
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(r["bandwidth_bps"], r["workers"]) for r in rows] == [(1e8, 1), (1e8, 2), (1e9, 1), (1e9, 2)]
    assert "sweep: 4 replays done" in result.stderr  # one line per phase when not on a terminal
