"""The README's validation tables against the campaign's saved validations they are made from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "benchmarks" / "readme_tables.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO_ROOT)


def test_the_readme_tables_are_those_the_saved_validations_give():
    result = run("--check")
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + "\nrun `python3 benchmarks/readme_tables.py` after adding results")


def test_a_stale_row_and_count_are_rewritten_from_the_results(tmp_path: Path):
    readme = (REPO_ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| CUBIC 5 ms, mlp 100mbit |"))
    count = readme.split("<!-- count: graph-twin-totals -->", 1)[1].split("<!-- /count -->", 1)[0]
    stale = readme.replace(row, "| CUBIC 5 ms, mlp 100mbit | +9.9% | +9.9% | +9.9% | +9.9% |").replace(
        count, "1 rows, median 9.9%, max 9.9%, none over 8%")
    copy = tmp_path / "README.md"
    copy.write_text(stale)
    assert run("--readme", str(copy), "--check").returncode == 1
    assert run("--readme", str(copy)).returncode == 0
    assert copy.read_text() == readme


def test_a_readme_without_the_markers_is_refused_in_one_line(tmp_path: Path):
    copy = tmp_path / "README.md"
    copy.write_text("# a README without tables\n")
    result = run("--readme", str(copy))
    assert result.returncode != 0
    assert "markers" in result.stderr and "Traceback" not in result.stderr
    assert copy.read_text() == "# a README without tables\n"
