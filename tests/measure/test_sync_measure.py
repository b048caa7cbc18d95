"""Measured SyncReplicasOptimizer clusters and slowed workers: updates, gradients, quotas, bad input, cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO_ROOT, needs_root
from tracetool.cluster.cpu_quota import GROUP_PREFIX, find_cpu_controller
from tracetool.errors import ToolError
from tracetool.measure.compared import PS_UPDATES, WORKER_STEPS
from tracetool.measure.slow_workers import SlowWorker, check_slow_workers, parse_slow_worker, worker_speeds
from tracetool.measure.sync_options import check_sync_options, replicas_to_aggregate
from tracetool.measure.updates import combined_update_fields, update_fields
from tracetool.measure.worker import update_counts


def tracetool_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool.cli", *args]


def test_replicas_default_to_every_worker_for_sync_and_one_fewer_for_backup():
    """R = N for sync, N - 1 for backup, as given when given; none for async."""
    assert replicas_to_aggregate("sync", None, 4) == 4
    assert replicas_to_aggregate("backup", None, 4) == 3
    assert replicas_to_aggregate("backup", 2, 4) == 2
    assert replicas_to_aggregate("async", None, 4) is None


@pytest.mark.parametrize(("sync", "r", "workers", "words"), [
    ("ssp", None, (2,), "measure runs"),
    ("async", 2, (2,), "sync or backup only"),
    ("sync", 0, (2,), "at least 1"),
    ("sync", 3, (2, 4), "above the 2 worker"),
    ("backup", None, (1, 2), "at least 2 workers"),
    ("backup", 2, (2, 3), "leaves no backup"),
])
def test_discipline_mistakes_are_refused(sync: str, r: int | None, workers: tuple[int, ...], words: str):
    """An unknown discipline, R with async, R above the smallest cluster, backup without a backup worker."""
    with pytest.raises(ToolError, match=words):
        check_sync_options(sync, r, workers)


@pytest.mark.parametrize("text", ["1", "a:2", "1:x", "1:0.5", "1:51", "1:nan", ":2"])
def test_slow_worker_needs_an_index_and_a_factor_from_1_to_50(text: str):
    """WORKER:FACTOR with FACTOR in [1, 50]; anything else is one line."""
    with pytest.raises(ToolError):
        parse_slow_worker(text)


def test_slowed_workers_must_exist_in_every_cluster_once():
    """Worker 2 of --workers 2,3 does not exist at N = 2; a worker given twice is refused."""
    assert parse_slow_worker("1:2.5") == SlowWorker(1, 2.5)
    check_slow_workers((SlowWorker(1, 2.0),), (2, 3))
    with pytest.raises(ToolError, match="not in every"):
        check_slow_workers((SlowWorker(2, 2.0),), (2, 3))
    with pytest.raises(ToolError, match="twice"):
        check_slow_workers((SlowWorker(1, 2.0), SlowWorker(1, 3.0)), (2, 3))


def test_replay_speeds_are_one_over_the_measured_slowdown():
    """Worker 2 measured 2.2x slower: speeds (1, 1, 1/2.2); a record without a measurement uses its factor."""
    assert worker_speeds([{"task_index": 2, "factor": 2.0, "measured_slowdown": 2.2}]) == pytest.approx(
        (1.0, 1.0, 1 / 2.2))
    assert worker_speeds([{"task_index": 0, "factor": 4.0}]) == (0.25,)
    assert worker_speeds([]) == ()


def test_updates_are_spread_over_bins_by_the_time_since_the_one_before():
    """Updates at 0.5, 1.5 and 2.5 s of a 2-bin window of 1 s each: one update per bin."""
    loop = SimpleNamespace(error=None, finished_unix_s=[100.5, 101.5, 102.5])
    counts = update_counts(loop, 100.0, 1.0, 2)
    assert counts["bin_updates"] == pytest.approx([0.5, 1.0])  # the first update's span started at 100.5
    assert counts["updates_in_window"] == 2


def test_synchronous_point_derives_gradients_from_updates():
    """4 updates/s with R = 2 of 3 workers and 12 steps/s: 8 gradients applied, 4 dropped per second."""
    result = {"bin_updates": [4.0, 4.0], "bin_s": 1.0, "replicas_to_aggregate": 2, "sync": "backup",
              "updates_in_window": 8}
    fields = update_fields(result, 12.0, 0.5, 0.2)
    assert fields["updates_per_second"] == pytest.approx(4.0) and fields["updates_per_second_std"] == 0.0
    assert fields["gradients_applied_per_second"] == pytest.approx(8.0)
    assert fields["gradients_dropped_per_second"] == pytest.approx(4.0)
    assert "derived" in fields["gradient_counts"]
    asynchronous = update_fields({"bin_s": 1.0}, 12.0, 0.5, 0.2)
    assert asynchronous["updates_per_second"] == 12.0 and asynchronous["gradients_dropped_per_second"] == 0.0


def test_repeated_points_average_updates_over_runs():
    """Runs of 3 and 5 updates/s: 4 with the spread between runs."""
    runs = [{"updates_per_second": u, "gradients_computed_per_second": 2 * u, "gradients_applied_per_second": u,
             "gradients_dropped_per_second": 0.0, "sync": "sync"} for u in (3.0, 5.0)]
    fields = combined_update_fields(runs)
    assert fields["updates_per_second"] == 4.0 and fields["run_updates_per_second"] == [3.0, 5.0]
    assert fields["updates_per_second_std"] == pytest.approx(2 ** 0.5)


def test_predicted_update_range_scales_with_the_steps_range():
    """Replayed steps 10 (9-11) with 5 updates/s: updates 5 (4.5-5.5); async compares steps as before."""
    point = {"steps_per_second": 10.0, "steps_per_second_std": 1.0, "steps_per_second_min": 9.0,
             "steps_per_second_max": 11.0, "updates_per_second": 5.0}
    assert PS_UPDATES.predicted(point) == pytest.approx({"value": 5.0, "std": 0.5, "min": 4.5, "max": 5.5})
    assert WORKER_STEPS.predicted(point)["value"] == 10.0


@pytest.mark.parametrize("args", [
    ["--workers", "2", "--sync", "ssp"],
    ["--workers", "2", "--replicas-to-aggregate", "3", "--sync", "sync"],
    ["--workers", "1,2", "--sync", "backup"],
    ["--workers", "2", "--slow-worker", "2:2"],
    ["--workers", "2", "--slow-worker", "1:0.5"],
    ["--workers", "2", "--slow-worker", "one:2"],
    ["--workers", "2", "--slow-worker", "1:1000"],
])
def test_bad_discipline_or_slowdown_is_one_line_and_exit_2(args: list[str], tmp_path: Path):
    """Mistakes in --sync, --replicas-to-aggregate and --slow-worker stop measure and validate before anything runs."""
    for command in ("measure", "validate"):
        result = subprocess.run(tracetool_argv(command, "--model", "mlp", *args, "--out", str(tmp_path / "o")),
                                capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert not (tmp_path / "o").exists()


def _our_groups(pid: int) -> list[str]:
    controller = find_cpu_controller()
    return [] if controller is None else sorted(p.name for p in controller.root.glob(f"{GROUP_PREFIX}{pid}-*"))


def _measure(tmp_path: Path, sync: str) -> tuple[dict, subprocess.CompletedProcess[str]]:
    out = tmp_path / sync
    proc = subprocess.Popen(
        tracetool_argv("measure", "--model", "resnet", "--batch-size", "8", "--workers", "2", "--duration", "3",
                       "--warmup", "2", "--sync", sync, "--slow-worker", "1:2", "--out", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert _our_groups(proc.pid) == []  # the quota's group went with the run
    return json.loads((out / "measured.json").read_text()), subprocess.CompletedProcess(proc.args, 0, stdout, stderr)


@pytest.mark.cluster
@needs_root
def test_sync_and_backup_clusters_with_a_slowed_worker(tmp_path: Path):
    """Two resnet workers, worker 1 under half a core. Each update queues N tokens and each worker step takes
    one, so both disciplines make one update per two steps. Sync (R = 2) waits for a second gradient, which
    often comes from the slowed worker; backup (R = 1) never does, so it makes clearly more updates, and there
    the slowed worker runs at its own pace: its steps are longer by (slowdown - 1) compute-only steps."""
    sync, _ = _measure(tmp_path, "sync")
    backup, _ = _measure(tmp_path, "backup")
    for data, r in ((sync, 2), (backup, 1)):
        (point,) = data["points"]
        assert data["sync"] == point["sync"] and point["replicas_to_aggregate"] == r
        assert point["updates_per_second"] == pytest.approx(point["steps_per_second"] / 2, rel=0.05)
        assert point["gradients_applied_per_second"] == pytest.approx(r * point["updates_per_second"])
        (slowed,) = data["slow_workers"]
        assert slowed["task_index"] == 1 and slowed["cores"] == 0.5 and slowed["period_us"] <= 10_000
        # the quota holds the throttled steps to half a core; how much slower that makes them depends on how
        # much of a core they used free: here 2.1-2.8x, on a CI machine once 1.42x
        assert slowed["cpu_cores_throttled"] < 0.55, slowed
        assert 1.2 < slowed["measured_slowdown"] < 3.5, slowed
        assert point["per_worker"][1]["cpu_cores"] < 0.55  # held to its half core
    (s,), (b,) = sync["points"], backup["points"]
    assert s["gradients_dropped_per_second"] < 0.05 * s["steps_per_second"]  # R = N: every gradient counts
    # sync holds both workers to one pace; backup lets the fast worker run ahead of it, and so
    # usually makes more updates. Between runs sync's pace varied from 7.9 to 11.6 steps/s on an AMD
    # EPYC and from 16 to 19 on an Intel Xeon, and under backup the busier PS and cores slowed the
    # quota's worker: backup made 1.04-1.52 times sync's updates, once 0.98 (a full suite's run),
    # while its fast worker stepped 1.33-1.94 times sync's pace. The fast worker's lead is the
    # discipline's mark; the updates only have to keep up with sync's
    sync_fast, sync_slow = (w["steps_per_second"] for w in s["per_worker"])
    assert sync_fast == pytest.approx(sync_slow, rel=0.1)
    fast, slow = (w["steps_per_second"] for w in b["per_worker"])
    assert fast > 1.15 * sync_fast
    assert b["updates_per_second"] > 0.9 * s["updates_per_second"]
    record = backup["slow_workers"][0]
    lost_s = (record["measured_slowdown"] - 1) * record["compute_step_s_unthrottled"]
    # at least half the compute the quota costs it, and at most two and a half times it: on an AMD
    # EPYC full suites' runs read 0.105 s against 0.086 expected (+22%) and 0.162 against 0.124
    # (+31%), the same test alone within 20%
    assert 1 / fast + 0.5 * lost_s < 1 / slow < 1 / fast + 2.5 * lost_s, (1 / slow, 1 / fast, lost_s)


@pytest.mark.cluster
@needs_root
def test_interrupted_slowed_run_removes_its_cgroup(tmp_path: Path):
    """Ctrl-C while the quota's slowdown is being timed: the group exists, then is gone, and the run exits 130."""
    proc = subprocess.Popen(
        tracetool_argv("measure", "--model", "mlp", "--model-arg", "width=64", "--batch-size", "8", "--workers", "2",
                       "--slow-worker", "1:2", "--duration", "30", "--out", str(tmp_path / "m")),
        stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "timing compute-only steps" in line:
            break
    time.sleep(1.0)
    assert _our_groups(proc.pid) == [f"{GROUP_PREFIX}{proc.pid}-w1"]
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, rest
    assert _our_groups(proc.pid) == []
    assert not (tmp_path / "m" / "measured.json").exists()
    assert os.path.isdir(tmp_path)
