"""Task processes forked from a Python that has already imported TensorFlow.

Importing TensorFlow costs 9 to 14 seconds of CPU, and a run of three tasks on two cores paid
it three times before its first step: most of a short measurement, and most of what the test
suite spends on real clusters. So the first task of a tool process starts one *preloader*
(``python -m tracetool.cluster.preloaded``) that imports TensorFlow and the task modules once,
then forks each later task from that state, which takes a fraction of a second.

Each task must still behave as if started by ``nsenter --net=NS -- python -m MODULE ARGS``:

- it is the tool's own child, so the tool can wait for it and read its exit code: the preloader
  forks twice, and the tool is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so the task is
  re-parented to the tool when the middle process exits;
- its parent-death signal is armed only after that re-parenting (``die_with_parent`` in the
  task module compares the parent with ``TFSIM_PARENT_PID``), so a killed tool still kills it;
- it leads its own session (the tool stops it by process group), is born in the network namespace
  with ``setns``, takes the environment and working directory of the request, and writes to the
  pipes the tool passed over the control socket (``SCM_RIGHTS``), so its stdout and stderr read as
  a ``Popen``'s.

Nothing but imports happens in the preloader before a fork: no TensorFlow context, server or
thread pool exists yet, so every task builds its own as a fresh process would.
``TFSIM_PRELOAD=0`` turns the preloader off; any failure to start it does too, quietly, and tasks
then start as plain processes.
"""

from __future__ import annotations

import atexit
import ctypes
import io
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import IO

from tracetool.cluster.parent_death import die_with_parent

PRELOAD_ENV = "TFSIM_PRELOAD"
# modules a forked task may run, and what the preloader imports for them
TASK_MODULES = ("tracetool.tf_task",)
PRELOADS = ("setproctitle", "tensorflow", "tracetool.measure.worker", "tracetool.collect.profile_worker",
            "tracetool.measure.compute_benchmark", "tf_keras")
_READY_TIMEOUT_S = 240.0
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWNET = 0x40000000
_MAX_MESSAGE = 1 << 20


class ForkedTask:
    """The ``subprocess.Popen`` surface ``TaskGroup`` uses, for a task the preloader forked."""

    def __init__(self, args: list[str], pid: int, stdout: IO[str], stderr: IO[str]) -> None:
        self.args = args
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere: it has ended, how is unknown
                    self.returncode = -int(signal.SIGKILL)
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:  # readable when the task ends: no polling loop beside a measurement
            ended = os.pidfd_open(self.pid)
        except OSError:  # already reaped, or a kernel before 5.3
            ended = None
        try:
            while (code := self.poll()) is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
                if ended is not None:
                    select.select([ended], [], [], left)
                else:
                    time.sleep(0.01 if left is None else min(0.01, left))
            return code
        finally:
            if ended is not None:
                os.close(ended)


def task_module_argv(argv: list[str]) -> tuple[str | None, str, list[str]] | None:
    """(namespace path or None, module, arguments) where ``argv`` runs a task module, else None."""
    namespace = None
    if len(argv) > 3 and argv[0] == "nsenter" and argv[1].startswith("--net=") and argv[2] == "--":
        namespace, argv = argv[1][len("--net="):], argv[3:]
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2] in TASK_MODULES:
        return namespace, argv[2], argv[3:]
    return None


class Preloader:
    """The tool's side of the preloader: starts it once, asks it for tasks."""

    def __init__(self, env: dict[str, str]) -> None:
        """``env`` is a task's (``TaskGroup.start``'s): the preloader imports what its tasks would."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracetool.cluster.preloaded", str(theirs.fileno()), *PRELOADS],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, start_new_session=True,
        )
        theirs.close()
        self.socket = ours
        self.lock = threading.Lock()
        try:
            ours.settimeout(_READY_TIMEOUT_S)
            reply = json.loads(ours.recv(_MAX_MESSAGE) or b"{}")
            ours.settimeout(None)
            if not reply.get("ready"):
                raise OSError("the preloader did not start")
        except BaseException:  # a timeout, a dead preloader or Ctrl-C: none is left running
            self.close()
            raise

    def spawn(self, argv: list[str], namespace: str | None, module: str, args: list[str],
              env: dict[str, str]) -> ForkedTask:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {"module": module, "args": args, "namespace": namespace, "env": env, "cwd": os.getcwd()}
        try:
            with self.lock:
                socket.send_fds(self.socket, [json.dumps(request).encode()], [out_w, err_w])
                reply = json.loads(self.socket.recv(_MAX_MESSAGE) or b"{}")
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        if "pid" not in reply:
            os.close(out_r)
            os.close(err_r)
            raise OSError(reply.get("error", "the preloader has stopped"))
        stdout = open(out_r, encoding="utf-8", errors="replace")  # noqa: SIM115  (the task's, closed at EOF)
        stderr = open(err_r, encoding="utf-8", errors="replace")  # noqa: SIM115
        return ForkedTask(argv, reply["pid"], stdout, stderr)

    def close(self) -> None:
        self.socket.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


_preloader: Preloader | None = None
_disabled = False
_start_lock = threading.Lock()


def preloader(env: dict[str, str]) -> Preloader | None:
    """This process's preloader, started on first use with a task's ``env``; None where it is off
    or cannot run."""
    global _preloader, _disabled
    with _start_lock:
        if _preloader is not None and _preloader.process.poll() is not None:
            _preloader = None  # it died: start another
        if _preloader is None and not _disabled:
            # The subreaper's forked tasks get it as their parent thread, whose end kills them:
            # only the main thread lives as long as the tool.
            if (os.environ.get(PRELOAD_ENV) == "0" or sys.platform != "linux"
                    or threading.current_thread() is not threading.main_thread()
                    or ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1) != 0):
                _disabled = True
                return None
            try:
                _preloader = Preloader(env)
            except (OSError, ValueError):
                _disabled = True
                return None
            atexit.register(_preloader.close)
        return _preloader


# --- the preloader process -------------------------------------------------------------------

def _serve(control: socket.socket) -> None:
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, _MAX_MESSAGE, 2)
        except OSError:
            return
        if not message:
            return  # the tool has gone
        try:
            request = json.loads(message)
            pid = _fork_task(control, request, fds)
            reply = {"pid": pid}
        except Exception as error:  # noqa: BLE001  (reported to the tool, which starts the task plainly)
            reply = {"error": f"{type(error).__name__}: {error}"}
        finally:
            for fd in fds:
                os.close(fd)
        control.send(json.dumps(reply).encode())


def _fork_task(control: socket.socket, request: dict, fds: list[int]) -> int:
    if len(fds) != 2:
        raise ValueError("a task needs its stdout and stderr pipes")
    sys.stdout.flush()
    sys.stderr.flush()
    read_pid, write_pid = os.pipe()
    middle = os.fork()
    if middle == 0:  # the middle process: fork the task, say its PID, exit so it is re-parented
        try:
            os.close(read_pid)
            if request.get("namespace"):  # the task is born inside: there once the tool hears its PID
                _enter_network_namespace(request["namespace"])
            task = os.fork()
            if task == 0:
                os.close(write_pid)
                _run_task(control, request, fds, middle_pid=os.getppid())
            os.write(write_pid, str(task).encode())
        finally:
            os._exit(0)
    os.close(write_pid)
    os.waitpid(middle, 0)
    with os.fdopen(read_pid, "rb") as said:
        text = said.read().decode()
    if not text:
        raise OSError("the task could not be forked")
    return int(text)


def _enter_network_namespace(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"cannot enter {path}")
    finally:
        os.close(fd)


def _run_task(control: socket.socket, request: dict, fds: list[int], middle_pid: int) -> None:
    """The forked task: become what ``nsenter ... python -m MODULE ARGS`` would have started."""
    code = 1
    try:
        control.close()
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (devnull, *fds):
            os.close(fd)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True, line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True, line_buffering=True)
        deadline = time.monotonic() + 5.0
        while os.getppid() == middle_pid and time.monotonic() < deadline:
            time.sleep(0.001)  # until the middle process has exited and the tool adopted this one
        _show_command_line(request["module"], request["args"])  # before the environment moves
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (a fresh process would print it and exit 1 too)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _show_command_line(module: str, args: list[str]) -> None:
    """``ps`` and ``/proc/PID/cmdline`` name the task as its plain start would have."""
    try:
        import setproctitle
    except ImportError:  # the preloader's command line stays: the task still runs
        return
    setproctitle.setproctitle(" ".join([sys.executable, "-m", module, *args]))


def main(argv: list[str]) -> int:
    die_with_parent()
    control = socket.socket(fileno=int(argv[0]))
    for module in argv[1:]:
        try:
            __import__(module)
        except ImportError:
            continue  # an optional one (tf_keras): its tasks import it themselves
    control.send(json.dumps({"ready": True}).encode())
    _serve(control)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
