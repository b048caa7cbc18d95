"""Atomic file writes: a reader or a crash never leaves half a file behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomically(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(text, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomically(path: str | os.PathLike[str], data: Any) -> None:
    write_text_atomically(path, json.dumps(data, indent=1) + "\n")
