"""A local TensorFlow cluster (one PS, N workers) inside network namespaces, and its lifecycle.

``LocalCluster`` picks addresses, writes the task spec, starts every task through
``TaskGroup``, and yields worker events as they arrive while watching that no task has died.
It runs all tasks in one fresh namespace that has only ``lo`` (nothing reachable from outside),
which needs root; only when asked to (``isolate=False``) does it use loopback ports that were
free a moment ago. A shaped
multi-namespace topology is a separate concern (``tracetool.cluster.topology``).
"""

from __future__ import annotations

import json
import queue
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from threading import Thread

from tracetool.cluster import leftovers, netns
from tracetool.cluster.processes import TaskGroup, TaskProcess, python_module_argv
from tracetool.cluster.task_spec import TaskSpec
from tracetool.errors import ToolError

BASE_PORT = 2222


def free_loopback_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _pump_events(task: TaskProcess, events: queue.Queue[tuple[str, dict]]) -> None:
    assert task.popen.stdout is not None
    for line in task.popen.stdout:
        line = line.strip()
        if line.startswith("{"):
            try:
                events.put((task.name, json.loads(line)))
            except json.JSONDecodeError:
                continue
    events.put((task.name, {"event": "eof"}))


class LocalCluster:
    """One PS task and ``workers`` worker tasks on this machine; everything ends with the block."""

    def __init__(self, workers: int = 1, isolate: bool = True) -> None:
        self.workers = workers
        if isolate:
            netns.require_namespaces()
        self.isolate = isolate
        self.namespace = netns.new_namespace_name("local") if self.isolate else ""
        self.group = TaskGroup()
        self.events: queue.Queue[tuple[str, dict]] = queue.Queue()
        self._tmp = tempfile.TemporaryDirectory(prefix=leftovers.spec_folder_prefix())
        self.worker_tasks: list[TaskProcess] = []

    def cluster_addresses(self) -> dict[str, list[str]]:
        if self.isolate:
            # a namespace created for this run has every port free
            ports = [BASE_PORT + i for i in range(self.workers + 1)]
        else:
            ports = free_loopback_ports(self.workers + 1)
        return {
            "ps": [f"localhost:{ports[0]}"],
            "worker": [f"localhost:{p}" for p in ports[1:]],
        }

    def __enter__(self) -> LocalCluster:
        leftovers.clean_after_killed_runs()
        if self.isolate:
            netns.create_namespace(self.namespace)
        self.group.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.group.__exit__(*exc)
        finally:
            if self.isolate:
                netns.delete_namespace(self.namespace)
            self._tmp.cleanup()

    def _argv(self, spec_path: Path, job: str, index: int) -> list[str]:
        argv = python_module_argv(
            "tracetool.tf_task", "--spec", str(spec_path), "--job", job, "--task-index", str(index)
        )
        return self.in_network(job, index, argv)

    def in_network(self, job: str, index: int, argv: list[str]) -> list[str]:
        """``argv`` run where the task's network is: this run's namespace, or loopback."""
        return netns.command_in_namespace(self.namespace, argv) if self.isolate else argv

    def start(self, spec: TaskSpec) -> None:
        spec_path = Path(self._tmp.name) / "spec.json"
        spec.save(spec_path)
        self.group.start("the PS task", self._argv(spec_path, "ps", 0))
        for i in range(self.workers):
            task = self.group.start(f"worker task {i}", self._argv(spec_path, "worker", i))
            self.worker_tasks.append(task)
            Thread(target=_pump_events, args=(task, self.events), daemon=True).start()

    def worker_events(self, timeout_s: float) -> Iterator[tuple[str, dict]]:
        """Yield (task name, event) until every worker has closed its output.

        Workers end at different moments, so one that exited cleanly before the others is no
        error; a task exiting non-zero, or the PS exiting at all, raises a one-line ToolError, as
        does hearing nothing for ``timeout_s``.
        """
        open_workers = len(self.worker_tasks)
        last_heard = time.monotonic()
        while open_workers:
            try:
                name, event = self.events.get(timeout=0.5)
            except queue.Empty:
                self.group.check_alive(may_finish=self.worker_tasks)
                if time.monotonic() - last_heard > timeout_s:
                    raise ToolError(
                        f"no progress from the workers for {timeout_s:.0f} s; is the PS reachable?"
                    ) from None
                continue
            last_heard = time.monotonic()
            if event.get("event") == "eof":
                open_workers -= 1
                task = next(t for t in self.worker_tasks if t.name == name)
                code = task.popen.wait()
                if code != 0:
                    time.sleep(0.5)
                    # a dead PS is the cause, the worker's error the symptom
                    self.group.check_alive(ignore=task, may_finish=self.worker_tasks)
                    raise ToolError(f"{name} exited with code {code}: {task.last_error_line()}")
                continue
            yield name, event
