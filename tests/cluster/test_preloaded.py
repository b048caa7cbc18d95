"""TensorFlow tasks forked from the preloader (tracetool.cluster.preloaded) behave as plainly
started ones: the tool's own children, in their namespace, under their own command line, with
their output, exit code and end where a ``Popen``'s would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.conftest import REPO_ROOT, needs_root, process_running
from tracetool.cluster import netns, preloaded
from tracetool.cluster.processes import TaskGroup, python_module_argv
from tracetool.cluster.task_spec import TaskSpec


def test_only_task_modules_are_forked():
    argv = python_module_argv("tracetool.tf_task", "--spec", "s.json", "--job", "ps")
    assert preloaded.task_module_argv(argv) == (None, "tracetool.tf_task", ["--spec", "s.json", "--job", "ps"])
    inside = netns.command_in_namespace("tfsim-1-local", argv)
    assert preloaded.task_module_argv(inside) == ("/var/run/netns/tfsim-1-local", "tracetool.tf_task",
                                                  ["--spec", "s.json", "--job", "ps"])
    assert preloaded.task_module_argv(python_module_argv("tracetool.measure.probe_agent", "serve")) is None
    assert preloaded.task_module_argv([sys.executable, "-c", "pass"]) is None


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@needs_root
def test_a_forked_ps_is_our_child_in_its_namespace_and_ends_with_the_group(tmp_path: Path):
    name = netns.new_namespace_name("local")
    netns.create_namespace(name)
    try:
        spec = tmp_path / "spec.json"
        TaskSpec(mode="measure", cluster={"ps": ["localhost:2222"], "worker": ["localhost:2223"]},
                 model="mlp", batch_size=8).save(spec)
        argv = netns.command_in_namespace(name, python_module_argv(
            "tracetool.tf_task", "--spec", str(spec), "--job", "ps", "--task-index", "0"))
        with TaskGroup() as group:
            task = group.start("the PS task", argv)
            assert isinstance(task.popen, preloaded.ForkedTask)
            first = json.loads(task.popen.stdout.readline())
            assert first["event"] == "server_started" and first["job"] == "ps"
            pid = task.popen.pid
            assert _ppid(pid) == os.getpid()  # re-parented to us: we read its exit code
            assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/var/run/netns/{name}").st_ino
            assert pid in netns.namespace_pids(name)
            assert os.getpgid(pid) == pid  # its own group, which stop_all signals
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            assert b"tracetool.tf_task" in cmdline and b"--job ps" in cmdline
            assert task.popen.poll() is None
        assert task.popen.returncode is not None and task.popen.returncode != 0  # stopped by the group
        assert not Path(f"/proc/{pid}").exists()  # reaped, no zombie left
    finally:
        netns.delete_namespace(name)


def test_a_failing_task_reports_its_exit_code_and_error_line(tmp_path: Path):
    argv = python_module_argv("tracetool.tf_task", "--spec", str(tmp_path / "missing.json"), "--job", "ps")
    with TaskGroup() as group:
        task = group.start("the PS task", argv)
        assert isinstance(task.popen, preloaded.ForkedTask)
        assert task.popen.wait(timeout=60) == 1
        time.sleep(0.2)  # the stderr reader's last lines
        assert "FileNotFoundError" in task.last_error_line() and "missing.json" in task.last_error_line()
        plain = group.start("a helper", [sys.executable, "-c", "pass"])
        assert isinstance(plain.popen, subprocess.Popen) and plain.popen.wait(timeout=30) == 0


@needs_root
def test_a_killed_tool_takes_its_forked_tasks_and_preloader_with_it(tmp_path: Path):
    """SIGKILL leaves no cleanup code to run: the parent-death signal ends the task and the preloader."""
    spec = tmp_path / "spec.json"
    TaskSpec(mode="measure", cluster={"ps": ["localhost:2222"], "worker": ["localhost:2223"]}, model="mlp",
             batch_size=8).save(spec)
    name = netns.new_namespace_name("local")
    netns.create_namespace(name)
    script = textwrap.dedent(f"""
        import time
        from tracetool.cluster import netns, preloaded
        from tracetool.cluster.processes import TaskGroup, python_module_argv
        group = TaskGroup().__enter__()
        task = group.start("the PS task", netns.command_in_namespace({name!r}, python_module_argv(
            "tracetool.tf_task", "--spec", {str(spec)!r}, "--job", "ps")))
        task.popen.stdout.readline()  # the server has started
        print(task.popen.pid, preloaded.preloader({{}}).process.pid, flush=True)
        time.sleep(120)
    """)
    tool = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        task_pid, preloader_pid = map(int, tool.stdout.readline().split())
        assert Path(f"/proc/{task_pid}").exists()
    finally:
        tool.kill()
        tool.wait()
        time.sleep(0.5)
        still_inside = netns.namespace_pids(name)
        netns.delete_namespace(name)
    assert task_pid not in still_inside
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in (task_pid, preloader_pid)):
        time.sleep(0.1)
    for pid in (task_pid, preloader_pid):
        # gone, or a zombie of init's until it reaps it
        assert not process_running(pid)
