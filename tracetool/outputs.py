"""Where the tool may write: the one place that checks outputs and commits them.

The promise to users: the tool never deletes or replaces what it did not write itself, and a
failed or interrupted run leaves every earlier output as it was. Every command therefore
checks its outputs before any work starts, and follows two rules:

- An output *file* (``tracetool graph --out g.json``) may be a new name or an existing regular
  file; anything else (a folder, a device such as ``/dev/null``, a FIFO, a symbolic link) is
  refused, because the atomic rename that writes it would put a regular file in its place.
- An output *folder* (profile, measure, validate, predict) is built under a hidden staging name
  beside it and swapped in when complete. It may replace only a folder that is new, empty, or
  was written by this tool: such a folder holds a marker file (``MARKER_FILE``) listing every
  file the tool wrote into it. A folder with any other file in it is refused, so ``--out .`` or
  ``--out ~/thesis`` cannot empty a user's folder. The new folder holds one run's outputs only.

Staging folders carry the creating process's PID, so a run that was killed (SIGKILL) before it
could clean up leaves one behind that the next run into the same place removes.

This module knows nothing of what the files hold.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tracetool.errors import ToolError
from tracetool.liveness import pid_alive

MARKER_FILE = ".tfsim-output.json"
MARKER_SCHEMA = "tfsim.output"
_STAGING = re.compile(r"^\.(?P<name>.+)\.tfsim-(?:partial|old)-(?P<pid>\d+)-[^/]+$")


def _describe_kind(path: Path) -> str:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _check_writable_parent(path: Path, option: str) -> None:
    """The folder that will hold ``path`` exists or can be made, and accepts a new file.

    Tried for real (a temporary file is created and removed): permission bits say nothing
    for root, and pseudo file systems such as /proc refuse files whatever their bits say."""
    parent = _nearest_existing(path.parent)
    if not parent.is_dir():
        raise ToolError(f"{option} {path}: {parent} is {_describe_kind(parent)}, not a folder; "
                        "give a path inside a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".tfsim-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ToolError(f"{option} {path}: cannot write in {parent} ({exc.strerror or exc}); "
                        "give a folder you can write to") from None


def check_output_file(path: Path, option: str = "--out") -> None:
    """Refuse, before any work, an output file that would replace something not a regular file."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ToolError(f"{option} {path} is {_describe_kind(path)}; give the name of a regular file to write "
                        "(the tool replaces only regular files)")
    _check_writable_parent(path, option)


def _files_in(folder: Path) -> list[str]:
    """Every entry below ``folder`` that is not a folder, as relative POSIX paths."""
    found = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        found.extend((rel / name).as_posix() for name in files)
        # a symbolic link to a folder is an entry of its own, not a folder to walk
        found.extend((rel / name).as_posix() for name in dirs if (Path(root) / name).is_symlink())
    return sorted(found)


def read_marker(folder: Path) -> dict | None:
    """The marker of a folder this tool wrote, or None."""
    try:
        data = json.loads((folder / MARKER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != MARKER_SCHEMA or not isinstance(data.get("files"), list):
        return None
    return data


def foreign_files(folder: Path) -> list[str]:
    """Files in ``folder`` that this tool did not write (all of them when it has no marker)."""
    marker = read_marker(folder)
    written = set(marker["files"]) if marker else set()
    return [f for f in _files_in(folder) if f != MARKER_FILE and f not in written]


def check_output_folder(path: Path, option: str = "--out") -> None:
    """Refuse, before any work, an output folder the tool may not replace."""
    if path.is_symlink():
        raise ToolError(f"{option} {path} is a symbolic link; give the folder itself or a new name")
    if path.exists():
        if not path.is_dir():
            raise ToolError(f"{option} {path} exists and is {_describe_kind(path)}, not a folder; "
                            "give a new folder name")
        others = foreign_files(path)
        if others:
            more = f" and {len(others) - 1} more" if len(others) > 1 else ""
            raise ToolError(f"{option} {path} holds files this tool did not write ({others[0]}{more}); "
                            "give a new or empty folder, or one an earlier run of this tool wrote")
    _check_writable_parent(path / "x", option)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_stale_staging(target: Path) -> list[Path]:
    """Remove staging folders beside ``target`` left by runs that were killed."""
    removed = []
    parent = target.parent
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        match = _STAGING.match(entry.name)
        if match and match.group("name") == target.name and not pid_alive(int(match.group("pid"))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def write_marker(folder: Path, command: str) -> None:
    """List every file now in ``folder`` as written by ``command``."""
    document = {
        "schema": MARKER_SCHEMA,
        "command": command,
        "files": [f for f in _files_in(folder) if f != MARKER_FILE],
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / MARKER_FILE).write_text(json.dumps(document, indent=1) + "\n")


def register_written_file(path: Path) -> None:
    """Add a file the tool just wrote into one of its own folders to that folder's marker.

    ``tracetool graph PROFILE --out PROFILE/graph.json`` writes into a profile folder; without
    this, the next profile into that folder would find a file it did not list and refuse."""
    folder = path.parent
    marker = read_marker(folder)
    if marker is None:
        return
    name = path.name
    if name not in marker["files"]:
        marker["files"] = sorted([*marker["files"], name])
        from tracetool.atomic_files import write_text_atomically

        write_text_atomically(folder / MARKER_FILE, json.dumps(marker, indent=1) + "\n")


def _swap_into_place(staging: Path, target: Path, option: str) -> None:
    """Rename the finished folder into place; an older one of ours is removed only after that."""
    old: Path | None = None
    if target.exists():
        others = foreign_files(target)  # files may have appeared while the run worked
        if others:
            raise ToolError(f"{option} {target} gained files this tool did not write while it ran ({others[0]}); "
                            f"the new outputs are kept in {staging}")
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.tfsim-old-{os.getpid()}-", dir=target.parent))
        old.rmdir()
        target.rename(old)
    staging.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def output_folder(target: Path, command: str, option: str = "--out") -> Iterator[Path]:
    """Yield a fresh staging folder; on success it becomes ``target``, on any failure it is removed.

    ``command`` names the writer in the marker (e.g. ``tracetool profile``)."""
    target = Path(os.path.abspath(target))
    check_output_folder(target, option)
    remove_stale_staging(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tfsim-partial-{os.getpid()}-", dir=target.parent))
    staging.chmod(0o777 & ~_umask())  # mkdtemp's private 0700 would follow the folder into place
    try:
        yield staging
        write_marker(staging, command)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    # Past this point the outputs are complete: a refusal to swap keeps them and says where.
    _swap_into_place(staging, target, option)
