"""Validation: prediction against measurement, row by row, with the documented files."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay.link_profile import QUEUE_WAIT_CAP_S
from tests.conftest import REPO_ROOT, needs_root
from tracetool.cli import build_parser
from tracetool.errors import ToolError
from tracetool.measure.validate import (
    link_latency_note,
    machine_mismatch,
    shaped_queue_s,
    standing_queue_delay_s,
)
from tracetool.measure.validation_report import (
    compare,
    error_pct,
    format_table,
    one_run_range,
    probe_run_spread,
    summarize,
)


def probe_tensors(profile: Path) -> tuple[int, ...]:
    """The download tensors of a profile's step graph, as TensorFlow's probe copies them."""
    from tracetool.graph.builder import build_stepgraph_from_path
    from tracetool.measure.probe_schedule import probe_schedule

    return probe_schedule(build_stepgraph_from_path(profile)).tensor_bytes


def tracetool_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool.cli", *args]


def test_error_is_signed_relative_to_the_measurement():
    """Predicting 1.1 for a measured 1.0 is +10%; 0.5 for 1.0 is -50%."""
    assert error_pct(1.1, 1.0) == pytest.approx(10.0)
    assert error_pct(0.5, 1.0) == pytest.approx(-50.0)
    assert math.isnan(error_pct(1.0, 0.0))


def _measured(workers: int, sps: float, saturated: bool = False) -> dict:
    return {"workers": workers, "steps_per_second": sps, "steps_per_second_ci95": 0.1, "steps_per_second_std": 0.1,
            "examples_per_second": 32 * sps, "cpu": {"tasks_total_cores": 0.5}, "cpu_saturated": saturated}


def _predicted(workers: int, sps: float) -> dict:
    return {"workers": workers, "steps_per_second": sps, "steps_per_second_std": 0.0, "examples_per_second": 32 * sps}


def test_rows_pair_worker_counts_and_summary_takes_absolute_errors():
    """Rows exist only for counts in both; median and max use |error|; saturated rows are summarized apart."""
    rows = compare([_predicted(1, 1.1), _predicted(2, 1.5), _predicted(3, 3.0)],
                   [_measured(1, 1.0), _measured(2, 2.0), _measured(4, 4.0, saturated=True)])
    assert [r["workers"] for r in rows] == [1, 2]
    summary = summarize(rows)
    assert summary["median_abs_error_pct"] == pytest.approx(17.5)
    assert summary["max_abs_error_pct"] == pytest.approx(25.0)
    assert summary["cpu_unsaturated"]["points"] == 2


def test_measurement_inside_the_seed_range_is_counted():
    """A measured rate between the lowest and highest seed's prediction is one the model can produce."""
    inside = {**_predicted(2, 1.0), "steps_per_second_min": 0.8, "steps_per_second_max": 1.2}
    outside = {**_predicted(3, 1.0), "steps_per_second_min": 0.95, "steps_per_second_max": 1.05}
    rows = compare([inside, outside], [_measured(2, 0.85), _measured(3, 0.85)])
    assert [r["within_predicted_range"] for r in rows] == [True, False]
    assert summarize(rows)["within_predicted_range"] == 1


def test_measurement_between_prediction_and_fair_sharing_is_in_the_band():
    """The band spans both predictions' seed ranges: here from fair's lowest seed to the default's highest."""
    predicted = [{**_predicted(n, 1.5), "steps_per_second_max": 1.55} for n in (2, 3, 4)]
    fair = [{**_predicted(n, 1.0), "steps_per_second_min": 0.9} for n in (2, 3, 4)]
    rows = compare(predicted, [_measured(2, 1.4), _measured(3, 0.85), _measured(4, 1.6)], fair)
    assert [r["predicted_fair"] for r in rows] == [1.0, 1.0, 1.0]
    assert [r["within_sharing_band"] for r in rows] == [True, False, False]
    assert summarize(rows)["within_sharing_band"] == 1


def test_prediction_between_the_slowest_and_fastest_run_is_counted():
    """Only repeated measurements count: one run has no range for a prediction to fall in."""
    repeated = {**_measured(2, 2.0), "run_steps_per_second": [1.8, 2.0, 2.2]}
    rows = compare([_predicted(1, 1.0), _predicted(2, 2.15), _predicted(3, 2.5)],
                   [_measured(1, 1.0), repeated, {**_measured(3, 2.0), "run_steps_per_second": [1.9, 2.1]}])
    assert [r["measured_runs"] for r in rows] == [[1.0], [1.8, 2.0, 2.2], [1.9, 2.1]]
    assert [r["within_measured_runs"] for r in rows] == [True, True, False]
    assert summarize(rows)["within_measured_runs"] == 1


def test_runs_outside_the_regimes_are_flagged():
    """Without a probe each measured run must fall between the bunching regime's slowest seed and
    the pipeline's fastest; a run slower than both is named, and the summary counts the rows that hold."""
    regimes = [{"workers": n, "low": 2.1, "high": 2.5, "bunching_chance": 0.5} for n in (2, 3)]
    inside = {**_measured(2, 2.3), "run_steps_per_second": [2.2, 2.4]}
    outside = {**_measured(3, 2.2), "run_steps_per_second": [2.0, 2.4]}
    rows = compare([_predicted(2, 2.3), _predicted(3, 2.3)], [inside, outside], regimes=regimes)
    assert [r["within_predicted_run_range"] for r in rows] == [True, False]
    assert [(r["predicted_run_low"], r["predicted_run_high"]) for r in rows] == [(2.1, 2.5)] * 2
    assert rows[1]["runs_outside_predicted_range"] == [2.0]
    summary = summarize(rows)
    assert (summary["with_predicted_run_range"], summary["within_predicted_run_range"]) == (2, 1)
    assert "a run outside one run's range" in format_table("t", rows, summary).splitlines()[3]


def test_one_runs_range_takes_the_probes_run_spread_too():
    """The regimes are what the replay knows; the probe's runs on the same link say how far one
    run strays besides (resnet at 50mbit behind 100 ms with CUBIC, three workers: regimes
    6.54-6.83, runs 6.09 to 7.43, the probe's 6.24 to 7.95). Its pooled spread, twice, around the
    prediction widens the range; one worker's runs, which no probe ran, keep none."""
    probe_runs = {2: [5.46, 5.30], 3: [6.33, 7.95, 6.24, 6.35], 4: [6.27, 6.99, 6.86]}
    spread = probe_run_spread(probe_runs)
    squares = sum((r / (sum(v) / len(v)) - 1) ** 2 for v in probe_runs.values() for r in v)
    assert spread == pytest.approx(math.sqrt(squares / 6))
    assert probe_run_spread({1: [3.9, 3.8], 2: [5.4]}) is None  # no contended count of two runs
    regime = {"workers": 3, "low": 6.540, "high": 6.825, "bunching_chance": 0.4}
    measured = {**_measured(3, 6.512), "run_steps_per_second": [6.09, 6.183, 6.345, 7.431]}
    rows = compare([_predicted(1, 3.99), _predicted(3, 6.609)], [_measured(1, 3.93), measured],
                   regimes=[regime], probe_runs=probe_runs)
    one, three = rows
    assert "predicted_run_low" not in one
    assert three["predicted_run_low"] == pytest.approx(6.609 * (1 - 2 * spread))
    assert three["predicted_run_high"] == pytest.approx(6.609 * (1 + 2 * spread))
    assert three["probe_run_spread_pct"] == pytest.approx(100 * spread)
    assert three["within_predicted_run_range"] and three["predicted_regime_low"] == 6.540
    assert one_run_range(6.609, regime, 0.001) == (6.540, 6.825)  # the regimes where they are wider


def test_errors_are_set_beside_the_runs_own_spread():
    """BBR behind 100 ms, vgg at 25mbit, two workers: TensorFlow's four runs and the probe's two give
    the mean a combined standard error of 4.7%; the prediction's +14.5% is beyond twice that. A
    single run, and one worker (no probe), have no spread to compare with."""
    tensorflow = {**_measured(2, 0.82325), "run_steps_per_second": [0.883, 0.748, 0.889, 0.773]}
    one_run = _measured(3, 0.81)
    one_worker = {**_measured(1, 0.597), "run_steps_per_second": [0.598, 0.596]}
    rows = compare([_predicted(1, 0.595), _predicted(2, 0.943), _predicted(3, 0.85)],
                   [one_worker, tensorflow, one_run], probe_runs={2: [0.956, 0.928], 3: [0.921]})
    spread = rows[1]
    assert spread["measured_standard_error_pct"] == pytest.approx(4.45, abs=0.01)
    assert spread["probe_standard_error_pct"] == pytest.approx(1.49, abs=0.01)
    assert spread["run_spread_error_pct"] == pytest.approx(4.69, abs=0.01)
    assert spread["error_pct"] == pytest.approx(14.5, abs=0.1) and not spread["within_run_spread"]
    # one worker: its two runs' spread alone (0.17%); an error under 1% is not told apart from it
    assert rows[0]["probe_standard_error_pct"] == 0.0 and rows[0]["within_run_spread"]
    closer = compare([_predicted(1, 0.590)], [one_worker])[0]
    assert closer["error_pct"] == pytest.approx(-1.17, abs=0.01) and not closer["within_run_spread"]
    assert "within_run_spread" not in rows[2] and "run_spread_error_pct" not in rows[2]
    summary = summarize(rows)
    assert (summary["with_run_spread"], summary["within_run_spread"]) == (2, 1)
    table = format_table("t", rows, summary)
    assert "beyond the runs' spread" in table.splitlines()[3]
    assert "1 of 2 within twice the runs' standard error" in table


def test_standing_queue_delay_is_the_shaped_queue_time():
    """A queue sized for 5 ms of traffic delays a busy link's bytes by 5 ms; an unshaped run has no queue."""
    shaped = {"bandwidth_bps": 100e6, "shaping": {"queue_latency_ms": 5, "queue_limit_bytes": 125_000}}
    assert standing_queue_delay_s(shaped) == pytest.approx(0.005)
    assert standing_queue_delay_s({"bandwidth_bps": None, "shaping": None}) == 0.0


def test_a_deep_buffer_adds_no_more_than_the_cap():
    """A 100 ms buffer delays a lone worker's transfers by a few ms, not by its depth, and validate
    says the latency was capped; a 5 ms buffer's is its own; an unshaped run says nothing."""
    deep = {"bandwidth_bps": 25e6, "shaping": {"queue_latency_ms": 100, "queue_limit_bytes": 328_884}}
    assert standing_queue_delay_s(deep) == pytest.approx(QUEUE_WAIT_CAP_S)
    assert link_latency_note(standing_queue_delay_s(deep), shaped_queue_s(deep)) == \
        " (link latency: 5.0 ms of shaped queue, the cap; the link queues up to 100 ms)"
    shallow = {"bandwidth_bps": 25e6, "shaping": {"queue_latency_ms": 5, "queue_limit_bytes": 48_000}}
    assert link_latency_note(standing_queue_delay_s(shallow), shaped_queue_s(shallow)) == \
        " (link latency: 5.0 ms of shaped queue)"
    assert link_latency_note(0.0, None) == ""
    assert QUEUE_WAIT_CAP_S == pytest.approx(0.005)


def test_the_shaped_queue_is_read_whole_for_the_link_fit():
    """The link fit sees the queue's whole depth (it decides whether the probe's rates set the
    contention efficiency); an unshaped run, or one that did not record its queue, has none."""
    deep = {"bandwidth_bps": 25e6, "shaping": {"queue_latency_ms": 100, "queue_limit_bytes": 328_884}}
    assert shaped_queue_s(deep) == pytest.approx(0.1)
    assert shaped_queue_s({"bandwidth_bps": None, "shaping": None}) is None
    assert shaped_queue_s({"bandwidth_bps": 25e6, "shaping": {"qdisc": "tbf"}}) is None


@pytest.mark.cluster
@needs_root
def test_real_validation_writes_rows_summary_and_plot(tmp_path: Path):
    """Profile, probe, predict and measure a small mlp at 2 workers (its probe at 1 and 2); then reuse both
    without a cluster. (A real one-worker row: test_a_failure_after_the_measurement_keeps_it_for_a_rerun; here
    its runs would cost a minute.)"""
    out = tmp_path / "v"
    common = ["--model", "mlp", "--model-arg", "width=128", "--batch-size", "8", "--bandwidth", "20mbit"]
    result = subprocess.run(
        tracetool_argv("validate", *common, "--workers", "2", "--duration", "2", "--settle", "2", "--warmup", "3",
                       "--probe-duration", "2",
                       "--steps", "2", "--seeds", "2", "--repeats", "2",
                       # no extra runs: their turns are test_measure_repeats' (each costs a quarter minute)
                       "--max-standard-error", "0.0001%", "--max-repeats", "2", "--out", str(out)),
        capture_output=True, text=True, timeout=400, cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "validation.json").read_text())
    assert [r["workers"] for r in data["rows"]] == [2]
    # the shaped link's queue holds 5 ms of traffic; the prediction takes it as latency
    assert data["queue_delay_s"] == pytest.approx(0.005)
    assert data["prediction_link"]["latency_s"] == data["queue_delay_s"]
    assert data["prediction_settings"]["sharing"] == "seniority"
    # the runs' workers shared this machine's cores, and so do the predicted ones
    assert data["prediction_settings"]["shared_cores"] == os.cpu_count()
    assert f"the workers' compute shares the runs' {os.cpu_count()} cores" in result.stderr
    assert data["prediction_fair_settings"]["sharing"] == "fair"
    for row in data["rows"]:
        assert row["predicted"] > 0 and row["measured"] > 0
        assert row["predicted_fair"] <= 1.05 * row["predicted_max"]
        assert row["error_pct"] == pytest.approx((row["predicted"] - row["measured"]) / row["measured"] * 100)
        # independent clusters per count; the point is the mean of the runs it counts
        assert row["measured"] == pytest.approx(sum(row["measured_runs"]) / len(row["measured_runs"]))
        assert row["within_measured_runs"] == (min(row["measured_runs"]) <= row["predicted"]
                                               <= max(row["measured_runs"]))
    assert data["summary"]["max_abs_error_pct"] >= data["summary"]["median_abs_error_pct"] >= 0
    assert (out / "validation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "measured" / "measured.json").is_file() and (out / "profile" / "meta.json").is_file()
    assert "median |error|" in result.stdout
    measured = json.loads((out / "measured" / "measured.json").read_text())
    # the shaper's token bucket is part of the predicted link, as tbf holds it
    assert data["burst_bytes"] == measured["shaping"]["burst_bytes"] > 0
    assert data["prediction_link"]["burst_bytes"] == data["burst_bytes"]
    assert "KiB bucket passes at once after idle" in result.stderr
    assert measured["repeats"] == 2 and measured["max_repeats"] == 2
    assert measured["max_standard_error"] == pytest.approx(1e-6)
    for point in measured["points"]:
        # two runs counted; a run the hypervisor or another process disturbed is left out and
        # replaced (at most 2 extra), while the cap allows no run for a spread
        left_out = point.get("runs_left_out", [])
        assert 2 <= len(point["runs"]) <= 4
        assert len(point["run_steps_per_second"]) == len(point["runs"]) - len(left_out)
        assert len(point["run_steps_per_second"]) == 2 or point["cpu_saturated"]
    assert "run 2 of 2" in result.stderr
    assert "the runs' mean is known to" not in result.stderr

    # TensorFlow's probe of the step (validate's default) took turns with the model, run for run, at
    # the counts where workers contend, and with the same rule for more runs
    assert "taking turns with the model's runs" in result.stderr
    log = result.stderr.splitlines()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(log) if f"{text}," in line or f"{text} (" in line)

    assert (line_of("mlp: 2 worker(s), run 1 of 2") < line_of("probe: probe_model: 2 worker(s), run 1 of 2")
            < line_of("mlp: 2 worker(s), run 2 of 2") < line_of("probe: probe_model: 2 worker(s), run 2 of 2"))
    # the probe runs one worker too
    probe_measured = json.loads((out / "probe-measured" / "measured.json").read_text())
    assert sorted(p["workers"] for p in probe_measured["points"]) == [1, 2]
    assert probe_measured["max_repeats"] == 2 and probe_measured["max_standard_error"] == pytest.approx(1e-6)
    turns = json.loads((out / "link-probe.json").read_text())
    assert turns["transport"] == "tensorflow"
    for point in probe_measured["points"]:
        runs = sorted(p["steps_per_second"] for p in turns["points"] if p["workers"] == point["workers"])
        assert runs == sorted(point["run_steps_per_second"])
        assert len(runs) == 2 or point["cpu_saturated"]
    # the fit replays the model's own step graph (the probe is its twin) to meet the probe's two
    # workers, or charges nothing where the probe is as fast as the loss-free replay
    fit = data["link_fit"]
    assert fit["replayed_workload"] == "model" and "replayed the model:" in result.stderr
    replayed, probed_rate = fit["replayed_steps_per_second"]["2"], fit["probe_steps_per_second"]["2"]
    assert (replayed == pytest.approx(probed_rate, rel=0.02)
            or (replayed < probed_rate and fit["download_reverse_efficiency"] > 0.99))
    assert data["contention_efficiency_source"] == "link probe"
    two = next(r for r in data["rows"] if r["workers"] == 2)
    assert two["probe_standard_error_pct"] > 0  # the probe's runs are part of the row's spread

    # Reuse both, and let a network-only probe of the step's shape measure the contention efficiency.
    # (validate's default probe is TensorFlow's own, below.)
    again = tmp_path / "v2"
    reuse = subprocess.run(
        tracetool_argv("validate", *common, "--seeds", "2", "--from-profile", str(out / "profile"),
                       "--from-measured", str(out / "measured" / "measured.json"), "--contention-efficiency",
                       "probe", "--probe-transport", "tcp", "--probe-duration", "2", "--probe-repeats", "1",
                       # the first validation measured the standing queue; this one fits without it
                       "--no-request-queue", "--out", str(again)),
        capture_output=True, text=True, timeout=180, cwd=REPO_ROOT,
    )
    assert reuse.returncode == 0, reuse.stderr
    reused = json.loads((again / "validation.json").read_text())
    assert [r["measured"] for r in reused["rows"]] == [r["measured"] for r in data["rows"]]
    assert reused["contention_efficiency_source"] == "link probe"
    assert reused["prediction_link"]["contention_efficiency"] == reused["contention_efficiency"]
    probe = json.loads((again / "link-probe.json").read_text())
    # the prediction's link takes the efficiencies that make the replay of the probe's workload meet it
    fit = reused["link_fit"]
    assert reused["contention_efficiency"] == fit["contention_efficiency"]
    # each measured worker count probed on a fresh link, the fit meeting its rate
    assert sorted(p["workers"] for p in probe["points"]) == [2]
    assert reused["request_queue_s"] == 0.0 and "request_queue_s" not in probe
    for point in probe["points"]:
        assert fit["probe_steps_per_second"][str(point["workers"])] == pytest.approx(point["steps_per_second"])
    for direction in ("download", "upload"):
        assert 0.1 <= probe[f"{direction}_reverse_efficiency"] <= 1.0
        assert reused["link_probe"][f"{direction}_reverse_efficiency"] == probe[f"{direction}_reverse_efficiency"]
        assert (reused["prediction_link"][f"{direction}_reverse_efficiency"]
                == reused["reverse_efficiencies"][direction] == fit[f"{direction}_reverse_efficiency"])
    assert sum(p["down_alone_reverse_s"] + p["down_contended_reverse_s"] for p in probe["points"]) > 0
    graph_bytes = json.loads((again / "prediction.json").read_text())["download_bytes_per_step"]
    assert probe["download_bytes"] == graph_bytes
    for point in probe["points"]:
        assert point["steps_per_second"] > 0 and 0 < point["down_busy"] <= 1 and 0 < point["up_busy"] <= 1

    # An earlier probe of the same step and link can be reused instead of probing again.
    third = tmp_path / "v3"
    reuse_probe = subprocess.run(
        tracetool_argv("validate", *common, "--seeds", "2", "--from-profile", str(out / "profile"),
                       "--from-measured", str(out / "measured" / "measured.json"), "--contention-efficiency",
                       "probe", "--from-link-probe", str(again / "link-probe.json"), "--no-request-queue",
                       "--out", str(third)),
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )
    assert reuse_probe.returncode == 0, reuse_probe.stderr
    assert "probing" not in reuse_probe.stderr
    reprobed = json.loads((third / "validation.json").read_text())
    assert reprobed["contention_efficiency"] == reused["contention_efficiency"]

    # TensorFlow itself as the probe: the step's own tensors, a sleep for the compute, on the same link.
    fourth = tmp_path / "v4"
    tensorflow_probe = subprocess.run(
        tracetool_argv("validate", *common, "--seeds", "2", "--from-profile", str(out / "profile"),
                       "--from-measured", str(out / "measured" / "measured.json"), "--probe-duration", "2",
                       "--settle", "2", "--probe-repeats", "1", "--no-request-queue", "--out", str(fourth)),
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )
    assert tensorflow_probe.returncode == 0, tensorflow_probe.stderr
    assert "probing the shaped link with TensorFlow" in tensorflow_probe.stderr
    assert "taking turns" not in tensorflow_probe.stderr  # the measurement was reused: the probe runs alone
    probed = json.loads((fourth / "validation.json").read_text())
    probe = json.loads((fourth / "link-probe.json").read_text())
    assert probe["transport"] == probed["link_probe"]["transport"] == "tensorflow"
    assert probe["download_bytes"] == graph_bytes
    model_source = (fourth / "probe_model.py").read_text()
    assert f"{len(probe_tensors(out / 'profile'))} tensors" in model_source
    probe_measured = json.loads((fourth / "probe-measured" / "measured.json").read_text())
    assert sorted(p["workers"] for p in probe_measured["points"]) == [1, 2]
    assert probe_measured["repeats"] == 1
    # more runs where they disagree, as validate's default for the measurement's runs
    assert probe_measured["max_standard_error"] == 0.04 and probe_measured["max_repeats"] == 8
    assert [p["steps_per_second"] for p in probe["points"]] == [rate for p in probe_measured["points"]
                                                                for rate in p["run_steps_per_second"]]
    # its rates alone set the fit: two workers met by the reverse efficiencies, or nothing charged
    # where the probe is as fast as the loss-free replay (a shallow buffer's workers in turns)
    fit = probed["link_fit"]
    replayed, probed_rate = fit["replayed_steps_per_second"]["2"], fit["probe_steps_per_second"]["2"]
    assert (replayed == pytest.approx(probed_rate, rel=0.02)
            or (replayed < probed_rate and fit["download_reverse_efficiency"] > 0.99))


@pytest.mark.parametrize(("args", "words"), [
    (["--contention-efficiency", "probe", "--workers", "1,2"], ["--bandwidth"]),
    (["--contention-efficiency", "probe", "--workers", "1", "--bandwidth", "20mbit"], ["2 or more"]),
    (["--contention-efficiency", "lots", "--workers", "1,2", "--bandwidth", "20mbit"], ["'probe'"]),
    (["--contention-efficiency", "probe", "--probe-duration", "0", "--workers", "1,2", "--bandwidth", "20mbit"],
     ["--probe-duration"]),
    (["--contention-efficiency", "probe", "--probe-repeats", "0", "--workers", "1,2", "--bandwidth", "20mbit"],
     ["--probe-repeats", "between 1 and"]),
    (["--from-link-probe", "link-probe.json", "--contention-efficiency", "1", "--workers", "1,2", "--bandwidth",
      "20mbit"], ["goes with"]),
])
def test_link_probe_needs_a_shaped_link_and_contending_workers(tmp_path: Path, args: list[str], words: list[str]):
    """Asking for a probe it cannot run is a one-line error before anything is profiled or measured."""
    out = tmp_path / "v"
    result = subprocess.run(tracetool_argv("validate", "--model", "mlp", *args, "--out", str(out)),
                            capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert not out.exists()


def test_reused_measurement_of_another_model_is_refused(tmp_path: Path):
    """--from-measured for a different model is a one-line error, before anything runs."""
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps({"schema": "tfsim.measured", "schema_version": 1, "model": "vgg", "batch_size": 32,
                                    "bandwidth_bps": 1e8, "points": []}))
    result = subprocess.run(tracetool_argv("validate", "--model", "mlp", "--from-measured", str(measured),
                                           "--out", str(tmp_path / "v")),
                            capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_a_local_runs_prediction_shares_its_cores_and_a_real_clusters_does_not():
    from tracetool.measure.validate import local_cores, measured_discipline

    local = {"network": "per-task namespaces on a bridge", "cpu_count": 2, "sync": "async"}
    assert local_cores(local) == 2 and measured_discipline(local) == {"shared_cores": 2}
    assert local_cores({**local, "network": "real hosts from cluster.json"}) == 0
    assert local_cores({"network": "loopback"}) == 0  # written before measurements named their cores
    assert measured_discipline({**local, "sync": "backup", "replicas_to_aggregate": 2}) == {
        "sync": "backup", "replicas_to_aggregate": 2, "shared_cores": 2}


def test_a_profile_from_another_cpu_is_named_and_an_unknown_one_is_not():
    assert machine_mismatch("Intel(R) Xeon(R) Processor", "AMD EPYC").startswith(
        "the profile was made on Intel(R) Xeon(R) Processor, the runs are on AMD EPYC")
    assert machine_mismatch("AMD EPYC", "AMD EPYC") is None
    assert machine_mismatch(None, "AMD EPYC") is None  # a graph from before the CPU was recorded
    assert machine_mismatch("AMD EPYC", None) is None


def test_the_step_graph_a_validation_saved_re_predicts_it_without_the_profile(tmp_path: Path):
    """A campaign point keeps graph.json, measured.json and TensorFlow's link probe, not the
    profile's traces: validate from them predicts what that validation predicted (the per-count
    fit, the replay and its seeds are deterministic), without TensorFlow."""
    point = REPO_ROOT / "benchmarks" / "results" / "environments" / "cubic-5ms" / "mlp-100mbit"
    earlier = point / "tf-probe-per-count"
    out = tmp_path / "v"
    # the same graph, said to be profiled on another CPU than the runs': predicted the same, warned
    graph = json.loads((earlier / "graph.json").read_text())
    graph["model"]["cpu_model"] = "Another CPU"
    other_cpu = tmp_path / "graph.json"
    other_cpu.write_text(json.dumps(graph))
    # that probe ran one worker too; its fit was made before the lone rate set the replayed compute
    probe = json.loads((earlier / "link-probe.json").read_text())
    probe["points"] = [p for p in probe["points"] if p["workers"] > 1]
    contended = tmp_path / "link-probe.json"
    contended.write_text(json.dumps(probe))
    result = subprocess.run(
        tracetool_argv("validate", "--model", "mlp", "--bandwidth", "100mbit", "--queue", "5ms",
                       "--from-profile", str(other_cpu),
                       "--from-measured", str(point / "measured" / "measured.json"),
                       "--from-link-probe", str(contended),
                       # that validation replayed no shaper's bucket, and fitted the link on the probe's chain
                       "--no-link-burst", "--link-fit-workload", "chain", "--out", str(out)),
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert "profiling" not in result.stderr and "probing" not in result.stderr
    assert json.loads((out / "validation.json").read_text())["burst_bytes"] == 0.0 and "bucket" not in result.stderr
    again, before = (json.loads((folder / "validation.json").read_text()) for folder in (out, earlier))
    # the runs' shared cores are replayed where that validation replayed none: the same replay to
    # rounding (mlp's compute never outnumbers two cores here)
    assert [r["workers"] for r in again["rows"]] == [r["workers"] for r in before["rows"]]
    for now, then in zip(again["rows"], before["rows"], strict=True):
        assert now["predicted"] == pytest.approx(then["predicted"], rel=1e-5)
    assert again["prediction_settings"]["shared_cores"] == 2
    assert again["link_fit"]["contention_by_workers"] == before["link_fit"]["contention_by_workers"]
    assert again["profile"] == str(other_cpu)
    measured_on = json.loads((point / "measured" / "measured.json").read_text())["cpu_model"]
    assert f"warning: the profile was made on Another CPU, the runs are on {measured_on}" in result.stderr
    # a file that is not a step graph is refused before anything runs
    refused = subprocess.run(
        tracetool_argv("validate", "--model", "mlp", "--workers", "1,2", "--bandwidth", "100mbit",
                       "--from-profile", str(point / "measured" / "measured.json"), "--out", str(tmp_path / "w")),
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "step graph" in refused.stderr and not (tmp_path / "w").exists()


def test_three_workers_that_pipeline_faster_than_two_workers_reverse_loss_allows_get_their_own(tmp_path: Path):
    """inception at 50mbit behind CUBIC's 100 ms buffer, as measured: the twin's two workers ran
    6.68 steps/s (some runs bunching), its three 8.51. Two workers' reverse loss (73%) held the
    replay of three to 7.36 with loss-free contention, and the prediction 12% under the model's
    runs (8.20). Re-predicted from the saved runs with validate's defaults, three workers get a
    reverse loss of their own: the replay of three comes closer to the twin, the predicted link
    carries it, and the three-worker prediction comes within 5% of the model's runs."""
    saved = REPO_ROOT / "benchmarks" / "results" / "environments" / "cubic-100ms" / "inception-50mbit" / "settled"
    before = json.loads((saved.parent / "settled-bucket" / "validation.json").read_text())
    out = tmp_path / "v"
    result = subprocess.run(
        tracetool_argv("validate", "--model", "inception", "--bandwidth", "50mbit", "--queue", "100ms",
                       "--tcp-congestion-control", "cubic", "--workers", "1,2,3,4",
                       "--from-profile", str(saved / "graph.json"),
                       "--from-measured", str(saved / "measured" / "measured.json"),
                       "--from-link-probe", str(saved / "link-probe.json"), "--out", str(out)),
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr
    assert "probing" not in result.stderr
    document = json.loads((out / "validation.json").read_text())
    fit, old_fit = document["link_fit"], before["link_fit"]
    assert old_fit["replayed_steps_per_second"]["3"] < 7.4 and "reverse_by_workers" not in old_fit
    assert fit["replayed_steps_per_second"]["3"] > 7.7
    for workers in ("2", "4"):
        assert fit["replayed_steps_per_second"][workers] == pytest.approx(fit["probe_steps_per_second"][workers],
                                                                          rel=0.02)
    three = fit["reverse_by_workers"]["3"]
    assert min(three) > fit["download_reverse_efficiency"] + 0.2
    assert [3, *three] in document["prediction_link"]["reverse_by_workers"]
    assert "at 3 workers" in result.stderr
    row = next(r for r in document["rows"] if r["workers"] == 3)
    assert abs(row["error_pct"]) < 5.0 < abs(next(r for r in before["rows"] if r["workers"] == 3)["error_pct"])


@pytest.mark.cluster
@needs_root
def test_a_failure_after_the_measurement_keeps_it_for_a_rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A real measurement finishes, then the prediction fails (forced here): the measurement is moved
    to OUT.kept (with the profile, had this run made it), the error says how to rerun from them, and
    nothing is left half-written."""
    from tracetool.cli_measure import _measure_request  # the request the command line would build
    from tracetool.measure import validate

    def refuse(*args: object, **kwargs: object) -> None:
        raise ToolError("the prediction was refused")

    monkeypatch.setattr(validate, "predicted_points", refuse)
    out = tmp_path / "v"
    args = build_parser().parse_args(["validate", "--model", "mlp", "--workers", "1", "--duration", "2",
                                      "--settle", "2", "--repeats", "1", "--warmup", "2",
                                      "--from-profile", str(REPO_ROOT / "traces" / "mlp"), "--out", str(out)])
    request = validate.ValidateRequest(measure=_measure_request(args, out / "measured"), out_dir=out,
                                       from_profile=REPO_ROOT / "traces" / "mlp")
    with pytest.raises(ToolError, match="the prediction was refused; the finished measurement is kept") as caught:
        validate.run_validate(request, progress=lambda text: None)
    kept = tmp_path / "v.kept"
    assert f"--from-profile {REPO_ROOT / 'traces' / 'mlp'} --from-measured {kept}" in str(caught.value)
    assert not out.exists()
    assert (kept / "measured" / "measured.json").is_file()
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]
    # the rerun the error names works without a cluster
    monkeypatch.undo()
    again = validate.ValidateRequest(measure=_measure_request(args, out / "measured"), out_dir=out,
                                     from_profile=REPO_ROOT / "traces" / "mlp",
                                     from_measured=kept / "measured" / "measured.json",
                                     seeds=1)
    assert validate.run_validate(again, progress=lambda text: None).is_file()


def test_validate_probes_and_repeats_by_default_where_it_can():
    """Without options validate does what its table was made with: two runs per point in 60-second
    windows after 20 s of settling, and TensorFlow's link probe wherever workers contend on a shaped
    link; measure keeps one run of 20 s."""
    from tracetool.cli_measure import _measure_request
    from tracetool.measure.validate import ValidateRequest, default_probe

    parser = build_parser()
    validate_args = parser.parse_args(["validate", "--model", "mlp", "--workers", "1,2", "--bandwidth", "20mbit",
                                       "--out", "v"])
    assert validate_args.contention_efficiency == "auto"
    # the probe: TensorFlow itself on the model's tensors, two runs per worker count
    assert validate_args.probe_transport == "tensorflow" and validate_args.probe_repeats is None
    # no request queue (it did not pay where it was left out of its fit), as replay predict; the
    # shaper's bucket replayed
    assert validate_args.request_queue is False and validate_args.link_burst is True
    # the link fit replays the model's own step graph against its twin's rates
    assert validate_args.link_fit_workload == "model"
    # the twin computes in the step graph's shape, overlapping the transfers as the model does
    assert validate_args.twin_shape == "graph"
    assert parser.parse_args(["validate", "--model", "mlp", "--workers", "1,2", "--bandwidth", "20mbit",
                              "--request-queue", "--out", "v"]).request_queue is True
    from tracetool.measure.transports import default_probe_repeats
    assert default_probe_repeats("tensorflow") == default_probe_repeats("tcp") == 2
    request = _measure_request(validate_args, Path("v"))
    assert request.repeats == 2 and default_probe(request)
    assert ValidateRequest(measure=request, out_dir=Path("v")).request_queue is False
    assert ValidateRequest(measure=request, out_dir=Path("v")).twin_shape == "graph"
    # and more runs, up to eight, of a count whose two runs are more than 8% apart
    assert request.max_standard_error == 0.04 and request.max_repeats == 8
    # 60-second windows opening 20 s after the last worker is warm: contended clusters pass between
    # regimes about once a minute, and their first 20 s run apart from where they settle
    assert (request.duration_s, request.settle_s) == (60.0, 20.0)
    measure_args = parser.parse_args(["measure", "--model", "mlp", "--workers", "1,2", "--out", "m"])
    measured = _measure_request(measure_args, Path("m"))
    assert measured.repeats == 1 and measured.max_standard_error is None and measured.max_repeats is None
    assert (measured.duration_s, measured.settle_s) == (20.0, 2.0)
    chosen = _measure_request(parser.parse_args(["validate", "--model", "mlp", "--workers", "1,2", "--duration", "30",
                                                 "--settle", "5", "--out", "v"]), Path("v"))
    assert (chosen.duration_s, chosen.settle_s) == (30.0, 5.0)
    asked = _measure_request(parser.parse_args(["measure", "--model", "mlp", "--workers", "1", "--repeats", "3",
                                                "--max-standard-error", "2.5%", "--out", "m"]), Path("m"))
    assert asked.max_standard_error == pytest.approx(0.025) and asked.max_repeats == 8
    off = _measure_request(parser.parse_args(["validate", "--model", "mlp", "--workers", "1,2", "--bandwidth",
                                              "20mbit", "--max-standard-error", "0", "--out", "v"]), Path("v"))
    assert off.max_standard_error is None and off.max_repeats is None
    one = _measure_request(parser.parse_args(["validate", "--model", "mlp", "--workers", "1", "--bandwidth",
                                              "20mbit", "--out", "v"]), Path("v"))
    unshaped = _measure_request(parser.parse_args(["validate", "--model", "mlp", "--workers", "1,2", "--out", "v"]),
                                Path("v"))
    assert not default_probe(one) and not default_probe(unshaped)


@pytest.mark.parametrize("duration,least", [("20", 20.0), ("90", 90.0)])
def test_the_tensorflow_probe_never_runs_a_shorter_window_than_the_model(duration: str, least: float):
    """The probe in turns is the model's twin: where the model's runs take longer windows
    (--duration), so do the probe's; its own rule (three steps per worker) can only lengthen it."""
    from tracetool.cli_measure import _measure_request
    from tracetool.graph.stepgraph import load_stepgraph
    from tracetool.measure.validate import ValidateRequest, probe_shape

    args = build_parser().parse_args(["validate", "--model", "mlp", "--workers", "1-4", "--bandwidth", "20mbit",
                                      "--duration", duration, "--out", "v"])
    request = ValidateRequest(measure=_measure_request(args, Path("v/measured")), out_dir=Path("v"))
    graph = load_stepgraph(REPO_ROOT / "traces" / "mlp" / "graph.json")
    shape = probe_shape(request, graph, 0.005)
    assert shape.window_s >= least
    step_alone_s = 8.0 * (shape.download_bytes + shape.upload_bytes) / 20e6 + shape.compute_s
    assert shape.window_s == pytest.approx(max(least, 3 * 4 * step_alone_s), rel=0.05)


def test_the_shapers_bucket_is_read_from_the_measurement():
    """tbf's burst as measure recorded it; nothing for an unshaped run or one recorded without it."""
    from tracetool.measure.validate import shaper_burst_bytes

    shaped = {"bandwidth_bps": 25e6, "shaping": {"qdisc": "tbf", "burst_bytes": 16384}}
    assert shaper_burst_bytes(shaped) == 16384.0
    assert shaper_burst_bytes({**shaped, "bandwidth_bps": None}) == 0.0
    assert shaper_burst_bytes({"bandwidth_bps": 25e6, "shaping": {"qdisc": "tbf"}}) == 0.0
    assert shaper_burst_bytes({"bandwidth_bps": 25e6}) == 0.0
