"""Task processes and their liveness checks (tracetool.cluster.processes), on real child processes."""

from __future__ import annotations

import sys
import time

import pytest

from tracetool.cluster.processes import TaskGroup
from tracetool.errors import ToolError


def _wait_until_exited(*tasks) -> None:
    deadline = time.monotonic() + 10
    while any(t.popen.poll() is None for t in tasks) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_task_that_may_finish_and_exited_cleanly_is_no_error():
    """A worker that finished its steps before the others is not a dead task."""
    with TaskGroup() as group:
        done = group.start("worker task 0", [sys.executable, "-c", "pass"])
        group.start("the PS task", [sys.executable, "-c", "import time; time.sleep(30)"])
        _wait_until_exited(done)
        group.check_alive(may_finish=[done])
        with pytest.raises(ToolError, match="worker task 0 exited with code 0"):
            group.check_alive()


def test_task_that_may_finish_but_failed_is_an_error():
    """A non-zero exit is a failure whether or not the task's job ends by itself."""
    with TaskGroup() as group:
        failed = group.start("worker task 1", [sys.executable, "-c", "raise SystemExit('out of memory')"])
        _wait_until_exited(failed)
        with pytest.raises(ToolError, match="worker task 1 exited with code 1: out of memory"):
            group.check_alive(may_finish=[failed])


def test_leaving_the_group_ends_every_task():
    """Cleanup: a long-running task is gone once the block is left."""
    with TaskGroup() as group:
        sleeper = group.start("the PS task", [sys.executable, "-c", "import time; time.sleep(60)"])
    assert sleeper.popen.poll() is not None
