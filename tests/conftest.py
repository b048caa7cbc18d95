"""Shared test fixtures: the committed zoo traces and the real traces from other projects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replay.synthetic import chain_graph
from tracetool.graph.stepgraph import save_stepgraph

REPO_ROOT = Path(__file__).resolve().parent.parent
TRACES_DIR = REPO_ROOT / "traces"
REAL_TRACES_DIR = REPO_ROOT.parent / "shared" / "realtraces"
ZOO = ("alexnet", "vgg", "inception", "resnet", "mlp")


def committed_profiles() -> list[Path]:
    return [TRACES_DIR / m for m in ZOO if (TRACES_DIR / m / "meta.json").exists()]


def real_trace_files() -> list[Path]:
    return sorted(REAL_TRACES_DIR.glob("*.json")) if REAL_TRACES_DIR.is_dir() else []


# The slowest variants of some real-cluster tests (a minute or so each) run only where asked for;
# the README's test command leaves them out to keep the suite within CI's 20 minutes.
SLOW_TESTS = os.environ.get("TFSIM_SLOW_TESTS") == "1"

def process_running(pid: int) -> bool:
    """Alive and not a zombie. A process may leave between two reads of /proc, so a missing entry
    counts as gone rather than as an error."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return False


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="real clusters run in network namespaces, which need root")


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    """A small chain step graph (download, 3 ms compute, upload) with a profiled link, saved as JSON."""
    model = {"name": "chain", "batch_size": 16, "untraced_step_time_s": {"mean": 0.004, "std": 0.0, "samples": [0.004]}}
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 1e9, "per_transfer_overhead_s": 1e-4}
    path = tmp_path / "graph.json"
    save_stepgraph(
        chain_graph(
            compute_us=3000.0, download_bytes=50_000, upload_bytes=50_000, model=model, link_calibration=calibration
        ),
        path,
    )
    return path
