"""Shared test fixtures: the committed zoo traces and the real traces from other projects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TRACES_DIR = REPO_ROOT / "traces"
REAL_TRACES_DIR = REPO_ROOT.parent / "shared" / "realtraces"
ZOO = ("alexnet", "vgg", "inception", "resnet", "mlp")


def committed_profiles() -> list[Path]:
    return [TRACES_DIR / m for m in ZOO if (TRACES_DIR / m / "meta.json").exists()]


def real_trace_files() -> list[Path]:
    return sorted(REAL_TRACES_DIR.glob("*.json")) if REAL_TRACES_DIR.is_dir() else []


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="real clusters run in network namespaces, which need root")
