"""Bad input gets one line on stderr, a non-zero exit, no traceback, and destroys nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, committed_profiles


def run_tracetool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetool.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO_ROOT,
        timeout=120,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode != 0
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0]


def test_empty_file(tmp_path: Path):
    """An empty trace file is refused as empty."""
    empty = tmp_path / "step.pb"
    empty.write_bytes(b"")
    assert_one_line_error(run_tracetool("graph", str(empty), "--out", str(tmp_path / "g.json")), "empty")


def test_corrupt_protobuf(tmp_path: Path):
    """Random bytes with a .pb name are refused as not a RunMetadata."""
    corrupt = tmp_path / "step.pb"
    corrupt.write_bytes(b"\xff\xfe\x00garbage" * 50)
    assert_one_line_error(run_tracetool("graph", str(corrupt), "--out", str(tmp_path / "g.json")), "RunMetadata")


def test_json_that_is_not_a_trace(tmp_path: Path):
    """A JSON file without traceEvents is refused as not a Chrome trace."""
    bogus = tmp_path / "t.json"
    bogus.write_text('{"hello": 1}')
    assert_one_line_error(run_tracetool("graph", str(bogus), "--out", str(tmp_path / "g.json")), "Chrome trace")


def test_wrong_file_type(tmp_path: Path):
    """A file of another type is refused and the accepted types are named."""
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert_one_line_error(run_tracetool("graph", str(other), "--out", str(tmp_path / "g.json")), ".pb")


def test_missing_input(tmp_path: Path):
    """A path that does not exist is named in the error."""
    assert_one_line_error(run_tracetool("graph", str(tmp_path / "nope"), "--out", str(tmp_path / "g.json")), "nope")


def test_failed_graph_keeps_existing_output(tmp_path: Path):
    """A refused input leaves an existing output file untouched."""
    out = tmp_path / "g.json"
    out.write_text("precious")
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    assert_one_line_error(run_tracetool("graph", str(bad), "--out", str(out)))
    assert out.read_text() == "precious"


def test_unknown_model(tmp_path: Path):
    """An unknown zoo name lists the known ones, before any process starts."""
    result = run_tracetool("profile", "--model", "nosuchnet", "--out", str(tmp_path / "p"))
    assert_one_line_error(result, "nosuchnet", "mlp")
    assert not (tmp_path / "p").exists()


def test_model_file_without_build(tmp_path: Path):
    """A model file with no build() is refused."""
    model = tmp_path / "mymodel.py"
    model.write_text("x = 1\n")
    assert_one_line_error(run_tracetool("profile", "--model", str(model), "--out", str(tmp_path / "p")), "build")


@pytest.mark.parametrize("args", [("--batch-size", "0"), ("--steps", "0")])
def test_impossible_parameters(tmp_path: Path, args: tuple[str, str]):
    """Zero batch size or zero traced steps are refused."""
    result = run_tracetool("profile", "--model", "mlp", *args, "--out", str(tmp_path / "p"))
    assert_one_line_error(result, args[0])


def test_show_refuses_a_non_graph(tmp_path: Path):
    """`show` on a trace rather than a step graph says how to make one."""
    profiles = committed_profiles()
    if not profiles:
        pytest.skip("no committed traces")
    result = run_tracetool("show", str(profiles[0] / "step-000.timeline.json"))
    assert_one_line_error(result, "tracetool graph")


def test_show_prints_summary():
    """`show` on a committed graph prints op counts, bytes and the top ops."""
    profiles = committed_profiles()
    if not profiles:
        pytest.skip("no committed traces")
    result = run_tracetool("show", str(profiles[0] / "graph.json"))
    assert result.returncode == 0, result.stderr
    assert "download" in result.stdout and "critical path" in result.stdout and "top ops" in result.stdout
