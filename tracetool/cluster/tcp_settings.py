"""TCP congestion control of the cluster's namespaces, and the host setting it may need.

New namespaces inherit the host's default algorithm, and the algorithm decides how concurrent
transfers share the PS link, so a measurement sets its own. A namespace may only pick an
algorithm the host allows; when the host does not allow it yet, it is added to the host's
allowed list for the run, recorded first (``leftovers``) so that even a killed run's change is
put back by the next run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tracetool.cluster import leftovers
from tracetool.cluster.netns import command_in_namespace
from tracetool.errors import ToolError

_SYSCTL = Path("/proc/sys/net/ipv4")
_ALLOWED_RECORD = "tcp-allowed-congestion-control"


def check_tcp_congestion_control(algorithm: str) -> None:
    """Refuse an algorithm this kernel does not have, before anything is started."""
    available = (_SYSCTL / "tcp_available_congestion_control").read_text().split()
    if algorithm not in available:
        raise ToolError(f"TCP congestion control '{algorithm}' is not available on this host; "
                        f"choose one of: {' '.join(available)}")


def set_tcp_congestion_control(name: str, algorithm: str) -> str | None:
    """Make ``algorithm`` the TCP congestion control of the namespace's sockets.

    New namespaces inherit the host's default (on some hosts BBR, not Linux's own CUBIC), and
    the choice decides how concurrent transfers share the PS link. A namespace may only pick an
    algorithm the host allows; if the host does not allow it yet, it is added to the host's
    allowed list and the list as it was is returned, so the caller can put it back."""
    check_tcp_congestion_control(algorithm)
    argv = command_in_namespace(name, ["sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={algorithm}"])
    if subprocess.run(argv, capture_output=True).returncode == 0:
        return None
    allowed = _SYSCTL / "tcp_allowed_congestion_control"
    previous = allowed.read_text().strip()
    # recorded before the change, so a run killed from here on still gets it put back
    leftovers.record_setting(_ALLOWED_RECORD, allowed, previous)
    allowed.write_text(" ".join([*previous.split(), algorithm]))
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        restore_allowed_congestion_control(previous)
        raise ToolError(f"could not set TCP congestion control '{algorithm}' in {name}: {result.stderr.strip()}")
    return previous


def restore_allowed_congestion_control(previous: str) -> None:
    (_SYSCTL / "tcp_allowed_congestion_control").write_text(previous)
    leftovers.forget_setting(_ALLOWED_RECORD)


def tcp_congestion_control(name: str) -> str:
    argv = command_in_namespace(name, ["cat", str(_SYSCTL / "tcp_congestion_control")])
    return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
