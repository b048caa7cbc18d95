"""Real profiles: a PS and a worker process in a private namespace, traced, graphed, cleaned up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, needs_root, process_running
from tracetool.cluster import netns
from tracetool.graph.builder import build_stepgraph_from_path
from tracetool.graph.stepgraph import DOWNLOAD, UPLOAD

pytestmark = [pytest.mark.cluster, needs_root]

SMALL_MLP = ["--model", "mlp", "--model-arg", "width=64", "--batch-size", "8"]


def tracetool_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool.cli", *args]


def our_namespaces(pid: int) -> list[str]:
    return [n for n in netns.list_namespaces() if n.startswith(f"{netns.NAMESPACE_PREFIX}{pid}-")]


def test_profile_writes_traces_meta_and_a_valid_graph(tmp_path: Path):
    """A real 1-PS/1-worker profile writes K RunMetadata + timelines and meta.json; its graph holds the parameters."""
    out = tmp_path / "prof"
    result = subprocess.run(
        tracetool_argv(
            "profile", *SMALL_MLP, "--steps", "2", "--warmup", "2", "--untraced-steps", "5", "--out", str(out)
        ),
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.glob("step-*")) == [
        "step-000.runmeta.pb",
        "step-000.timeline.json",
        "step-001.runmeta.pb",
        "step-001.timeline.json",
    ]
    meta = json.loads((out / "meta.json").read_text())
    # hidden layers 784->64->64->32, logits 32->10, each with a bias
    assert meta["parameter_count"] == (784 * 64 + 64) + (64 * 64 + 64) + (64 * 32 + 32) + (32 * 10 + 10)
    assert meta["parameter_bytes"] == 4 * meta["parameter_count"]
    assert len(meta["untraced_step_time_s"]["samples"]) == 5
    assert meta["untraced_steps_per_second"] > 0
    assert meta["tensorflow_version"].startswith("2.")
    graph = build_stepgraph_from_path(out)
    assert graph.bytes_of_kind(DOWNLOAD) == meta["parameter_bytes"]
    assert graph.bytes_of_kind(UPLOAD) >= meta["parameter_bytes"]
    assert not our_namespaces(os.getpid())


def test_profile_of_a_user_model_file(tmp_path: Path):
    """A user's model file with build(batch_size) is profiled like a zoo model, with the chosen optimizer."""
    model = tmp_path / "tiny.py"
    model.write_text(
        "import tensorflow as tf\n"
        "def build(batch_size):\n"
        "    x = tf.random.uniform([batch_size, 16])\n"
        "    w = tf.compat.v1.get_variable('w', [16, 4])\n"
        "    return tf.reduce_mean(tf.square(tf.matmul(x, w)))\n"
    )
    out = tmp_path / "prof"
    result = subprocess.run(
        tracetool_argv(
            "profile",
            "--model",
            str(model),
            "--optimizer",
            "momentum",
            "--steps",
            "1",
            "--warmup",
            "1",
            "--untraced-steps",
            "2",
            "--out",
            str(out),
        ),
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["parameter_bytes"] == 16 * 4 * 4
    names = {v["name"] for v in meta["variables"]}
    assert "w" in names and "w/Momentum" in names


def test_ctrl_c_cleans_up_processes_and_namespace(tmp_path: Path):
    """SIGINT during a profile ends every task process, removes the namespace and leaves no output folder."""
    out = tmp_path / "prof"
    proc = subprocess.Popen(
        tracetool_argv("profile", *SMALL_MLP, "--untraced-steps", "100000", "--out", str(out), "--quiet"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(len(netns.namespace_pids(n)) >= 2 for n in our_namespaces(proc.pid)):
        time.sleep(0.2)
    task_pids = [p for n in our_namespaces(proc.pid) for p in netns.namespace_pids(n)]
    assert task_pids, "the cluster never came up"
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "Traceback" not in stderr
    assert not our_namespaces(proc.pid)
    for pid in task_pids:
        assert not process_running(pid)
    assert not out.exists()


def test_a_crashed_ps_is_reported_in_one_line(tmp_path: Path):
    """Killing the PS mid-profile gives a one-line error naming the PS, and cleans up."""
    proc = subprocess.Popen(
        tracetool_argv("profile", *SMALL_MLP, "--untraced-steps", "100000", "--out", str(tmp_path / "p"), "--quiet"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    ps_pid = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and ps_pid is None:
        for name in our_namespaces(proc.pid):
            for pid in netns.namespace_pids(name):
                try:  # a process listed a moment ago (a short-lived helper) may be gone already
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except FileNotFoundError:
                    continue
                if b"--job ps" in cmdline:
                    ps_pid = pid
        time.sleep(0.2)
    assert ps_pid is not None, "the PS never came up"
    time.sleep(3)
    os.kill(ps_pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(("profile", "\r"))]
    error_lines = [ln for ln in lines if ln.startswith("error:")]
    assert len(error_lines) == 1 and "PS" in error_lines[0], stderr
    assert not our_namespaces(proc.pid)


def test_two_worker_profile_traces_each_worker(tmp_path: Path):
    """With --workers 2 both workers train against one PS; each one's steps build a graph with its own rate."""
    out = tmp_path / "prof"
    result = subprocess.run(
        tracetool_argv(
            "profile",
            *SMALL_MLP,
            "--workers",
            "2",
            "--steps",
            "1",
            "--warmup",
            "2",
            "--untraced-steps",
            "4",
            "--out",
            str(out),
        ),
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["workers"] == 2 and len(meta["per_worker"]) == 2
    for index in (0, 1):
        graph = build_stepgraph_from_path(out / f"worker-{index}")
        assert graph.bytes_of_kind(DOWNLOAD) == meta["parameter_bytes"]
        rate = meta["per_worker"][index]["untraced_steps_per_second"]
        assert graph.model["untraced_steps_per_second"] == rate
