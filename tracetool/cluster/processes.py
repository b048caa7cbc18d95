"""Start, watch and always stop the TensorFlow task processes of a run.

Each task runs in its own process group so that stopping it also stops anything it spawned.
``TaskGroup`` is a context manager: leaving it by success, error or Ctrl-C terminates every
process it started. SIGTERM is turned into KeyboardInterrupt while a group is open so a killed
run still unwinds through the cleanup code. TensorFlow tasks are forked from a process that has
imported TensorFlow already (``tracetool.cluster.preloaded``), where that can run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from threading import Thread
from types import FrameType
from typing import IO

from tracetool.cluster import preloaded
from tracetool.cluster.parent_death import child_environment
from tracetool.errors import ToolError


@dataclass
class TaskProcess:
    name: str
    popen: subprocess.Popen[str] | preloaded.ForkedTask
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))

    def last_error_line(self) -> str:
        """The most telling line of a dead task's stderr: a Python error, else TF's last complaint."""
        lines = [ln.strip() for ln in self.stderr_tail if ln.strip()]
        for line in reversed(lines):  # the exception itself: "ValueError: ...", "tensorflow...Error: ..."
            if _EXCEPTION_LINE.match(line):
                return line[:300]
        for line in reversed(lines):  # not a traceback's "File ..." line of a function named *error*
            if ("Error" in line or "error" in line) and not line.startswith('File "'):
                return line[:300]
        return lines[-1][:300] if lines else "no output"


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: |$)")


def _drain(stream: IO[str], tail: deque[str]) -> None:
    for line in stream:
        tail.append(line)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class TaskGroup:
    """The processes of one run; all of them end when the ``with`` block ends."""

    def __init__(self) -> None:
        self.tasks: list[TaskProcess] = []
        self._old_sigterm: object = None

    def __enter__(self) -> TaskGroup:
        self._old_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
        signal.signal(signal.SIGTERM, self._old_sigterm)  # type: ignore[arg-type]

    def start(
        self, name: str, argv: list[str], log_path: Path | None = None, env: dict[str, str] | None = None
    ) -> TaskProcess:
        full_env = child_environment()
        full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        full_env["PYTHONUNBUFFERED"] = "1"
        # The child must import this project even when it is run from a source checkout.
        root = str(Path(__file__).resolve().parents[2])  # tracetool/cluster/processes.py -> the checkout
        full_env["PYTHONPATH"] = root + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
        if env:
            full_env.update(env)
        popen = _forked(argv, full_env) or subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=full_env,
            start_new_session=True,
        )
        task = TaskProcess(name=name, popen=popen)
        assert popen.stderr is not None
        Thread(target=_drain, args=(popen.stderr, task.stderr_tail), daemon=True).start()
        self.tasks.append(task)
        return task

    def check_alive(self, ignore: TaskProcess | None = None, may_finish: Collection[TaskProcess] = ()) -> None:
        """Raise a one-line error naming the first task that died on its own.

        Tasks in ``may_finish`` have a job that ends (workers running a fixed number of steps):
        for them only a non-zero exit is a failure, since they finish at different moments.
        """
        for task in self.tasks:
            if task is ignore:
                continue
            code = task.popen.poll()
            if code == 0 and task in may_finish:
                continue
            if code is not None:
                time.sleep(0.2)  # let the stderr reader catch the last lines
                if code < 0:
                    raise ToolError(f"{task.name} was killed by signal {-code}; the run was stopped")
                raise ToolError(f"{task.name} exited with code {code}: {task.last_error_line()}")

    def stop_all(self, grace_s: float = 3.0) -> None:
        for task in self.tasks:
            if task.popen.poll() is None:
                _signal_group(task.popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for task in self.tasks:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                task.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                _signal_group(task.popen.pid, signal.SIGKILL)
                task.popen.wait()
            # the whole group, in case the task left children behind
            _signal_group(task.popen.pid, signal.SIGKILL)


def _forked(argv: list[str], env: dict[str, str]) -> preloaded.ForkedTask | None:
    """A task module forked from the preloader (TensorFlow already imported), where it runs."""
    launch = preloaded.task_module_argv(argv)
    if launch is None or (preloader := preloaded.preloader(env)) is None:
        return None
    try:
        return preloader.spawn(argv, *launch, env=env)
    except OSError:
        return None


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def python_module_argv(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]
