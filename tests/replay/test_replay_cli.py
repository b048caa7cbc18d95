"""The replay command: one-line errors for bad input, and the report files for good input (replay.cli)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay.cli import main
from tests.conftest import REPO_ROOT
from tracetool.outputs import MARKER_FILE


def run_replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay.cli", *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]


def test_missing_graph_is_one_line_error(tmp_path: Path):
    """A graph file that does not exist gets one error line, exit 2 and no output folder."""
    out = tmp_path / "out"
    assert_one_line_error(
        run_replay("predict", str(tmp_path / "nope.json"), "--bandwidth", "1gbit", "--out", str(out)), "does not exist"
    )
    assert not out.exists()


def test_wrong_schema_version_is_one_line_error(tmp_path: Path, graph_file: Path):
    """A step graph of another schema version is refused with the version in the message."""
    data = json.loads(graph_file.read_text())
    data["schema_version"] = 99
    graph_file.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert_one_line_error(run_replay("predict", str(graph_file), "--bandwidth", "1gbit", "--out", str(out)), "99")
    assert not out.exists()


@pytest.mark.parametrize("bandwidth", ["0", "-1gbit", "lots"])
def test_bad_bandwidth_is_one_line_error(tmp_path: Path, graph_file: Path, bandwidth: str):
    """Zero, negative and unparsable bandwidths are refused before anything is written."""
    out = tmp_path / "out"
    assert_one_line_error(
        run_replay("predict", str(graph_file), f"--bandwidth={bandwidth}", "--out", str(out)), "bandwidth"
    )
    assert not out.exists()


@pytest.mark.parametrize("efficiency", ["0", "1.5"])
def test_impossible_contention_efficiency_is_one_line_error(tmp_path: Path, graph_file: Path, efficiency: str):
    out = tmp_path / "out"
    assert_one_line_error(
        run_replay("predict", str(graph_file), "--bandwidth=100mbit", f"--contention-efficiency={efficiency}",
                   "--out", str(out)), "contention efficiency"
    )
    assert not out.exists()


@pytest.mark.parametrize(("args", "word"), [(["--overtake-time=0"], "--overtake-time"),
                                           (["--sharing=fair", "--overtake-time=0.1"], "--overtake-time"),
                                           (["--join-window=-1"], "--join-window"),
                                           (["--leader-weight=0", "--sync=sync"], "--leader-weight"),
                                           (["--sharing=fair", "--join-window=0.5"], "--join-window")])
def test_impossible_sharing_option_is_one_line_error(tmp_path: Path, graph_file: Path, args: list[str], word: str):
    out = tmp_path / "out"
    assert_one_line_error(run_replay("predict", str(graph_file), "--bandwidth=100mbit", *args, "--out", str(out)), word)
    assert not out.exists()


def test_constant_overtake_chance_is_recorded_as_inf(tmp_path: Path, graph_file: Path, capsys):
    """JSON has no infinity; a constant chance (--overtake-time inf) is written as "inf"."""
    out = tmp_path / "out"
    assert main(["predict", str(graph_file), "--workers", "2", "--bandwidth", "100mbit", "--overtake-time", "inf",
                 "--seeds", "1", "--steps", "5", "--out", str(out)]) == 0
    settings = json.loads((out / "prediction.json").read_text())["settings"]
    assert settings["overtake_time_s"] == "inf" and settings["overtake"] == pytest.approx(0.4)


def test_zero_workers_is_one_line_error(tmp_path: Path, graph_file: Path, capsys):
    """--workers 0 is refused with exit code 2."""
    out = tmp_path / "out"
    code = main(["predict", str(graph_file), "--workers", "0", "--bandwidth", "1gbit", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "workers" in err[0]
    assert not out.exists()


def test_predict_writes_prediction_plot_and_timelines(tmp_path: Path, graph_file: Path, capsys):
    """A good run prints the table and writes prediction.json, throughput.png and one timeline per N."""
    out = tmp_path / "out"
    code = main(
        [
            "predict",
            str(graph_file),
            "--workers",
            "1,2,4",
            "--bandwidth",
            "100mbit",
            "--latency",
            "0.2ms",
            "--steps",
            "10",
            "--seeds",
            "2",
            "--jobs",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert "steps/s" in capsys.readouterr().out
    prediction = json.loads((out / "prediction.json").read_text())
    assert [p["workers"] for p in prediction["points"]] == [1, 2, 4]
    for field in (
        "steps_per_second",
        "examples_per_second",
        "steps_per_second_std",
        "steps_per_second_min",
        "steps_per_second_max",
        "downlink_utilization",
        "uplink_utilization",
        "ps_utilization",
        "compute_s",
        "waiting_for_parameters_s",
        "waiting_for_link_s",
    ):
        assert field in prediction["points"][0]
    assert prediction["points"][0]["examples_per_second"] == pytest.approx(
        16 * prediction["points"][0]["steps_per_second"]
    )
    assert prediction["link"]["download_bandwidth_bps"] == 1e8
    assert prediction["link"]["latency_s"] == pytest.approx(2e-4)
    assert "compute_scale" in prediction["calibration"]
    assert (out / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for n in (1, 2, 4):
        assert "traceEvents" in json.loads((out / f"timeline-{n}.json").read_text())
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [MARKER_FILE]  # no temporary files


def test_parallel_jobs_give_the_same_points_as_one_job(graph_file: Path):
    """Replays spread over processes give the same numbers as replays in one process."""
    from replay.engine.link import target_link
    from replay.sweep import ReplaySettings, predict_throughput
    from tracetool.graph.stepgraph import load_stepgraph

    graph = load_stepgraph(graph_file)
    link = target_link(graph, 1e8)
    one = predict_throughput(graph, [1, 3], link, ReplaySettings(seeds=2, measured_steps=8, jobs=1))
    two = predict_throughput(graph, [1, 3], link, ReplaySettings(seeds=2, measured_steps=8, jobs=2))
    assert [p.steps_per_second for p in one] == [p.steps_per_second for p in two]


def _steps_per_worker(timeline: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for e in json.loads(timeline.read_text())["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "step":
            worker = int(e["args"]["name"].split()[1])
            counts[worker] = counts.get(worker, 0) + 1
    return counts


def test_timeline_steps_sets_how_many_steps_each_worker_shows(tmp_path: Path, graph_file: Path):
    """Longer timelines for studying steady state: every worker shows the steps asked for."""
    args = ["predict", str(graph_file), "--workers", "3", "--bandwidth", "100mbit", "--steps", "10", "--seeds", "1",
            "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path / "default")]) == 0
    assert main([*args, "--timeline-steps", "12", "--out", str(tmp_path / "long")]) == 0
    assert _steps_per_worker(tmp_path / "default" / "timeline-3.json") == {0: 3, 1: 3, 2: 3}
    assert _steps_per_worker(tmp_path / "long" / "timeline-3.json") == {0: 12, 1: 12, 2: 12}


def test_zero_timeline_steps_is_one_line_error(tmp_path: Path, graph_file: Path):
    out = tmp_path / "out"
    result = run_replay("predict", str(graph_file), "--workers", "2", "--bandwidth", "1gbit",
                        "--timeline-steps", "0", "--out", str(out))
    assert_one_line_error(result, "--timeline-steps")
    assert not out.exists()
