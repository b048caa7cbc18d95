"""Measured clusters: step counting, rates with a spread, CPU accounting, a real shaped run, cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from replay.engine.slowdown import read_step_times_csv
from tests.conftest import REPO_ROOT, needs_root, process_running
from tracetool.cluster import netns
from tracetool.errors import ToolError
from tracetool.graph.read_runmetadata import read_runmetadata
from tracetool.liveness import pid_alive
from tracetool.measure.measurement import (
    CpuSnapshot,
    build_point,
    cpu_use,
    link_use,
    machine_cpu_s,
    parse_worker_counts,
    process_cpu_s,
)
from tracetool.measure.stats import rate_stats, t95
from tracetool.measure.worker import spread_over_bins, window_bins


def tracetool_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool.cli", *args]


def test_step_straddling_bins_is_split_by_time():
    """A step from 0.5 s to 2.5 s adds a quarter, a half and a quarter to bins 0, 1 and 2."""
    counts = [0.0, 0.0, 0.0, 0.0]
    spread_over_bins(100.5, 102.5, 100.0, 1.0, counts)
    assert counts == pytest.approx([0.25, 0.5, 0.25, 0.0])


def test_steps_outside_the_window_count_only_their_inside_part():
    """A step half before the window counts 0.5; one after it counts nothing."""
    counts = [0.0, 0.0]
    spread_over_bins(9.0, 11.0, 10.0, 1.0, counts)
    spread_over_bins(12.0, 13.0, 10.0, 1.0, counts)
    assert counts == pytest.approx([0.5, 0.0])


def test_back_to_back_steps_sum_to_the_window_rate():
    """Steps of 0.3 s back to back over a 6 s window give 20 steps, 3.33 steps/s in every bin."""
    bins, bin_s = window_bins(6.0)
    counts = [0.0] * bins
    t = 99.9
    while t < 107:
        spread_over_bins(t, t + 0.3, 100.0, bin_s, counts)
        t += 0.3
    assert sum(counts) == pytest.approx(20.0)
    assert [c / bin_s for c in counts] == pytest.approx([1 / 0.3] * bins)


def test_window_bins_are_at_least_one_second_and_at_most_ten():
    """Batch means: 8 s gives 8 bins of 1 s, 60 s gives 10 bins of 6 s."""
    assert window_bins(8.0) == (8, 1.0)
    assert window_bins(60.0) == (10, 6.0)


def test_confidence_interval_uses_student_t():
    """Rates 1, 2, 3: mean 2, sample std 1, half-width 4.303/sqrt(3)."""
    stats = rate_stats([1.0, 2.0, 3.0])
    assert stats["mean"] == pytest.approx(2.0)
    assert stats["std"] == pytest.approx(1.0)
    assert stats["ci95"] == pytest.approx(4.303 / 3**0.5)
    assert t95(1000) == pytest.approx(1.96)


def test_point_sums_workers_and_scales_by_batch():
    """Two workers at 1 and 2 steps/s make 3 steps/s, 96 examples/s at batch 32."""
    result = {"workers": 2, "duration_s": 4.0, "bins": 2, "bin_s": 2.0,
              "bin_counts": [[2.0, 2.0], [4.0, 4.0]], "cpu_s": [0.4, 0.8], "mean_step_time_s": [1.0, 0.5]}
    point = build_point(result, 32, None)
    assert point["workers"] == 2
    assert point["steps_per_second"] == pytest.approx(3.0)
    assert point["examples_per_second"] == pytest.approx(96.0)
    assert point["steps_per_second_std"] == pytest.approx(0.0)
    assert [w["steps_per_second"] for w in point["per_worker"]] == pytest.approx([1.0, 2.0])
    assert [w["cpu_cores_self_reported"] for w in point["per_worker"]] == pytest.approx([0.1, 0.2])


def test_process_cpu_time_counts_a_busy_loop():
    """/proc/<pid>/stat agrees with the kernel's own process_time() over half a CPU second of busy looping."""
    pid = os.getpid()
    before_proc, before_own = process_cpu_s(pid), time.process_time()
    while time.process_time() - before_own < 0.5:
        pass
    after_proc, after_own = process_cpu_s(pid), time.process_time()
    assert before_proc is not None and after_proc is not None
    assert after_proc - before_proc == pytest.approx(after_own - before_own, abs=0.05)


def test_cpu_saturation_is_flagged_above_85_percent_of_the_cores():
    """Processes using 1.9 of 2 cores flag a saturated run; 1.0 does not."""
    cores = os.cpu_count() or 1
    base = CpuSnapshot(0.0, {"a": 0.0}, 0.0)
    busy = cpu_use(base, CpuSnapshot(1.0, {"a": 0.95 * cores}, 0.95 * cores))
    calm = cpu_use(base, CpuSnapshot(1.0, {"a": 0.5 * cores}, 0.5 * cores))
    assert busy["saturated"] and not calm["saturated"]


def test_hypervisor_steal_is_reported_and_flags_the_point():
    """0.5 cores stolen in a 2 s window is 0.25 cores: flagged though the cluster used little."""
    base = CpuSnapshot(0.0, {"a": 0.0}, 0.0, 0.0)
    stolen = cpu_use(base, CpuSnapshot(2.0, {"a": 0.6}, 1.2, 0.5))
    calm = cpu_use(base, CpuSnapshot(2.0, {"a": 0.6}, 0.8, 0.1))
    assert stolen["steal_cores"] == pytest.approx(0.25) and calm["steal_cores"] == pytest.approx(0.05)
    assert stolen["stolen_by_hypervisor"] and stolen["saturated"] and stolen["saturated_by_other_processes"]
    assert not calm["stolen_by_hypervisor"] and not calm["saturated"]


def test_machine_cpu_counts_steal_within_busy_time():
    busy, steal = machine_cpu_s()
    assert 0.0 <= steal <= busy


def test_link_use_is_bits_over_time_against_the_shaped_rate():
    """1.25 MB down in 2 s on a 10 Mbit/s link is 5 Mbit/s, half the link; drops are differenced."""
    zero = {"bytes": 0, "packets": 0, "drops": 1, "overlimits": 0}
    before = {"download": zero, "upload": zero}
    after = {"download": {**zero, "bytes": 1_250_000, "drops": 3}, "upload": zero}
    use = link_use(before, after, 2.0, 10e6)
    assert use["download"]["bits_per_second"] == pytest.approx(5e6)
    assert use["download"]["utilization"] == pytest.approx(0.5)
    assert use["download"]["drops"] == 2 and use["upload"]["utilization"] == 0


def test_worker_counts_parse_lists_and_ranges():
    """'1-3,5' is 1, 2, 3, 5; zero and junk are refused."""
    assert parse_worker_counts("1-3,5") == (1, 2, 3, 5)
    assert parse_worker_counts("4,2,2") == (2, 4)
    for bad in ("0", "a", "1,,2", "-1"):
        with pytest.raises(ToolError):
            parse_worker_counts(bad)


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "nosuch", "--workers", "1"],
        ["--model", "mlp", "--workers", "0"],
        ["--model", "mlp", "--workers", "1", "--bandwidth", "fast"],
        ["--model", "mlp", "--workers", "1", "--duration", "0.5"],
        ["--model", "mlp", "--workers", "1", "--bandwidth", "10mbit", "--tcp-congestion-control", "no-such-cc"],
        ["--model", "mlp"],
    ],
)
def test_bad_input_is_one_line_and_non_zero(args: list[str], tmp_path: Path):
    """Bad model, workers, bandwidth, duration or congestion control: one error line, exit 2, nothing started."""
    result = subprocess.run(tracetool_argv("measure", *args, "--out", str(tmp_path / "m")), capture_output=True,
                            text=True, timeout=60, cwd=REPO_ROOT)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


MLP_BYTES = 4 * ((784 * 1024 + 1024) + (1024 * 1024 + 1024) + (1024 * 512 + 512) + (512 * 10 + 10))


@pytest.mark.cluster
@needs_root
def test_two_shaped_workers_measure_below_the_link_bound(tmp_path: Path):
    """A real 2-worker mlp cluster at 100mbit writes measured.json; it cannot beat 100 Mbit/s per
    direction. Its window opens only after the workers trained together for the asked settle."""
    out = tmp_path / "m"
    result = subprocess.run(
        tracetool_argv("measure", "--model", "mlp", "--batch-size", "16", "--workers", "2", "--bandwidth", "100mbit",
                       "--duration", "8", "--settle", "6", "--warmup", "2", "--trace-steps", "1", "--out", str(out)),
        capture_output=True, text=True, timeout=200, cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "measured.json").read_text())
    assert data["schema"] == "tfsim.measured" and data["bandwidth_bps"] == 100e6
    assert isinstance(data["cpu_saturated"], bool)
    (point,) = data["points"]
    assert point["workers"] == 2 and len(point["per_worker"]) == 2
    # the chief sees the last worker warm only between its own steps (polling every 0.25 s), and a
    # contended step right after warm-up can take a second or more: the window opens up to a few s late
    assert data["settle_s"] == 6 and 5.0 <= point["settled_s"] <= 9.0
    assert "s after the last worker was warm" in result.stderr
    # every step moves all parameters down and all gradients up the one shaped link
    link_bound = 100e6 / (8 * MLP_BYTES)
    assert 0.3 * link_bound < point["steps_per_second"] <= 1.05 * link_bound
    assert point["steps_per_second"] == pytest.approx(sum(w["steps_per_second"] for w in point["per_worker"]))
    assert point["examples_per_second"] == pytest.approx(16 * point["steps_per_second"])
    assert point["steps_per_second_ci95"] >= 0 and point["bins"] == 8
    assert set(point["cpu"]["process_cores"]) == {"ps", "worker0", "worker1"}
    assert 0 < point["cpu"]["tasks_total_cores"] < os.cpu_count()
    assert "2 worker(s):" in result.stderr
    # each worker traced one contended step: every parameter came down and every gradient went up
    assert point["traces"] == "traces/workers-2"
    for worker in (0, 1):
        trace = read_runmetadata(out / "traces" / "workers-2" / f"worker-{worker}" / "step-000.runmeta.pb")
        moved = [r.transfer for r in trace.records if r.transfer is not None]
        assert sum(t.bytes for t in moved if "/job:ps/" in t.src_device) == MLP_BYTES
        assert sum(t.bytes for t in moved if "/job:ps/" in t.dst_device) >= MLP_BYTES
        assert (out / "traces" / "workers-2" / f"worker-{worker}" / "step-000.timeline.json").stat().st_size > 0
    assert not [n for n in netns.list_namespaces() if n.startswith("tfsim-") and "-w" in n
                and not pid_alive(int(n.split("-")[1]))]
    # every worker's step times of the window, as replay's trace-driven slowdown reads them
    times = read_step_times_csv(out / "step-times" / "workers-2-run-1.csv")
    assert len(times) == 2 and all(len(steps) >= 2 for steps in times)
    for worker, steps in enumerate(times):
        measured_mean = point["per_worker"][worker]["mean_step_time_s"]
        assert sum(steps) / len(steps) == pytest.approx(measured_mean, rel=0.05)


def _namespaces_of(pid: int) -> list[str]:
    return [n for n in netns.list_namespaces() if n.startswith(f"{netns.NAMESPACE_PREFIX}{pid}-")]


@pytest.mark.cluster
@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_killed_measurement_leaves_nothing_behind(sig: int, tmp_path: Path):
    """Interrupting a shaped run once its cluster is up removes its namespaces and ends every task process."""
    proc = subprocess.Popen(
        tracetool_argv("measure", "--model", "mlp", "--model-arg", "width=64", "--batch-size", "8", "--workers", "2",
                       "--bandwidth", "100mbit", "--duration", "30", "--out", str(tmp_path / "m")),
        stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
    )
    assert proc.stderr is not None
    task_pids: set[int] = set()
    for line in proc.stderr:
        if "started 1 PS" in line:
            break
    time.sleep(1.0)  # the tasks are importing TensorFlow: interrupt them mid-start
    for name in _namespaces_of(proc.pid):
        task_pids.update(netns.namespace_pids(name))
    assert len(task_pids) >= 3
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) != 0
    assert "interrupted" in rest
    assert _namespaces_of(proc.pid) == []
    alive = [pid for pid in task_pids if Path(f"/proc/{pid}").exists()]
    assert alive == []
    assert not (tmp_path / "m" / "measured.json").exists()


def _algorithm_the_host_does_not_allow() -> str | None:
    sysctl = Path("/proc/sys/net/ipv4")
    available = (sysctl / "tcp_available_congestion_control").read_text().split()
    allowed = (sysctl / "tcp_allowed_congestion_control").read_text().split()
    return next((a for a in available if a not in allowed), None)


@pytest.mark.cluster
@needs_root
def test_sigkilled_measurement_is_cleaned_up_by_the_next_run(tmp_path: Path):
    """SIGKILL gives a run no chance to clean up: its tasks die with it at once, and the next run removes
    its namespaces, spec folder and staging folder and puts back the host setting it changed."""
    allowed_file = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    allowed_before = allowed_file.read_text()
    algorithm = _algorithm_the_host_does_not_allow() or "cubic"
    out = tmp_path / "m"
    common = ("measure", "--model", "mlp", "--model-arg", "width=64", "--batch-size", "8", "--workers", "1",
              "--bandwidth", "100mbit", "--tcp-congestion-control", algorithm, "--out", str(out))
    proc = subprocess.Popen(tracetool_argv(*common, "--duration", "30"), stderr=subprocess.PIPE, text=True,
                            cwd=REPO_ROOT)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "started 1 PS" in line:
            break
    time.sleep(1.0)
    task_pids = {pid for name in _namespaces_of(proc.pid) for pid in netns.namespace_pids(name)}
    assert len(task_pids) >= 2
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while any(process_running(pid) for pid in task_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    # died with their parent (a zombie is dead: where this test process is a child subreaper, having
    # forked tasks of its own, the killed run's tasks become its zombies until it ends)
    assert [pid for pid in task_pids if process_running(pid)] == []
    left = {
        "namespaces": _namespaces_of(proc.pid),
        "spec folders": list(Path(tempfile.gettempdir()).glob(f"tfsim-spec-{proc.pid}-*")),
        "staging folders": list(tmp_path.glob(f".m.tfsim-partial-{proc.pid}-*")),
    }
    assert all(left.values()), left  # what a killed run leaves, until the next run
    if allowed_before.split() != allowed_file.read_text().split():
        assert algorithm in allowed_file.read_text().split()
    result = subprocess.run(tracetool_argv(*common, "--duration", "2"), capture_output=True, text=True,
                            cwd=REPO_ROOT, timeout=180)
    assert result.returncode == 0, result.stderr
    assert _namespaces_of(proc.pid) == []
    assert list(Path(tempfile.gettempdir()).glob(f"tfsim-spec-{proc.pid}-*")) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    assert (out / "measured.json").is_file()
    assert allowed_file.read_text().split() == allowed_before.split()
