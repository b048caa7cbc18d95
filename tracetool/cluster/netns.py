"""Network namespaces that keep TensorFlow's servers off every real interface.

TensorFlow's gRPC server listens on all interfaces whatever address its cluster spec names, so
every TF process of a profile or measurement runs inside a namespace this module creates: only
``lo``, or ``lo`` plus the tool's own veth. Names carry the creating PID so a later run can tell
a stale namespace (its creator is gone) from a live one and remove it. Processes are entered
with ``nsenter`` rather than ``ip netns exec``, which forks and would hide the real PID.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time

from tracetool.errors import ToolError
from tracetool.liveness import pid_alive

NAMESPACE_PREFIX = "tfsim-"
_STALE_NAME = re.compile(rf"^{NAMESPACE_PREFIX}(\d+)-")


def run_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise ToolError(f"'ip {' '.join(args)}' failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


def namespaces_available() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("nsenter") is not None


def require_namespaces() -> None:
    if os.geteuid() != 0:
        raise ToolError(
            "TF servers listen on all interfaces, so they run in a private network namespace, which needs root: "
            "run as root, or pass --allow-loopback to run them on loopback anyway"
        )
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            raise ToolError(f"'{tool}' is not installed; install iproute2 and util-linux")


def new_namespace_name(role: str) -> str:
    return f"{NAMESPACE_PREFIX}{os.getpid()}-{role}"


def list_namespaces() -> list[str]:
    output = run_ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def create_namespace(name: str) -> None:
    """Create a namespace with only ``lo`` up."""
    if name in list_namespaces():
        delete_namespace(name)
    run_ip("netns", "add", name)
    run_ip("-n", name, "link", "set", "lo", "up")


def namespace_pids(name: str) -> list[int]:
    output = run_ip("netns", "pids", name, check=False).stdout
    return [int(p) for p in output.split() if p.isdigit()]


def delete_namespace(name: str) -> None:
    """Kill whatever still runs inside, then remove the namespace (and with it its veth ends)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = namespace_pids(name)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3.0
        while namespace_pids(name) and time.monotonic() < deadline:
            time.sleep(0.05)
    run_ip("netns", "del", name, check=False)


def clean_stale_namespaces() -> list[str]:
    """Remove namespaces left by runs that were killed before they could clean up."""
    removed = []
    for name in list_namespaces():
        match = _STALE_NAME.match(name)
        if match and not pid_alive(int(match.group(1))):
            delete_namespace(name)
            removed.append(name)
    return removed


def command_in_namespace(name: str, argv: list[str]) -> list[str]:
    return ["nsenter", f"--net=/var/run/netns/{name}", "--", *argv]
