"""A Keras application trained by Keras's own fit() under the TF2 profiler, turned into a PS step graph.

The capture is made live (tests/fixtures/tf2/capture.py in its own process, a real TF2 run) and
its variables come from the model itself (``tracetool graph --model``), built by the collector.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_reliability import run_cli

CAPTURE_SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "tf2" / "capture.py"


@pytest.fixture(scope="module")
def mobilenet_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tf2-mobilenet")
    subprocess.run([sys.executable, str(CAPTURE_SCRIPT), "mobilenet_v2", str(out)], check=True, timeout=300,
                   capture_output=True)
    return out


def test_keras_fit_capture_with_the_model_itself(mobilenet_capture: Path, tmp_path: Path):
    """Every variable Keras counts is downloaded (batch-norm statistics too: the fused op reads them),
    every trainable one is uploaded, and each is found by its layer's name."""
    xplane = next(mobilenet_capture.glob("plugins/profile/*/*.xplane.pb"))
    facts = json.loads((mobilenet_capture / "variables.json").read_text())
    out = tmp_path / "graph.json"
    result = run_cli("tracetool", "graph", str(xplane), "--model", "keras:mobilenet_v2", "--model-arg", "input_size=32",
                     "--model-arg", "classes=10", "--out", str(out), timeout=300)
    assert result.returncode == 0, result.stderr
    graph = json.loads(out.read_text())
    assert graph["model"]["parameter_bytes"] == 4 * facts["count_params"]
    trainable_bytes = sum(v["bytes"] for v in facts["variables"])
    assert sum(n["bytes"] for n in graph["nodes"] if n["kind"] == "upload") == trainable_bytes
    match = graph["source"]["variables"]
    assert match["first_use_matched"] == match["downloaded"]
    assert match["gradient_matched"] == len(facts["variables"])
    assert graph["source"]["traced_steps"] == 2  # fit() marked its two steps
    assert "found by layer name" in result.stdout


def test_keras_fit_capture_with_a_variables_file(mobilenet_capture: Path, tmp_path: Path):
    """The trainable variables alone (what a user can list from model.trainable_variables) size the same uploads."""
    xplane = next(mobilenet_capture.glob("plugins/profile/*/*.xplane.pb"))
    facts = json.loads((mobilenet_capture / "variables.json").read_text())
    out = tmp_path / "graph.json"
    result = run_cli("tracetool", "graph", str(xplane), "--variables", str(mobilenet_capture / "variables.json"),
                     "--out", str(out))
    assert result.returncode == 0, result.stderr
    graph = json.loads(out.read_text())
    trainable_bytes = sum(v["bytes"] for v in facts["variables"])
    assert graph["model"]["parameter_bytes"] == trainable_bytes
    assert graph["model"]["batch_size"] == 32
