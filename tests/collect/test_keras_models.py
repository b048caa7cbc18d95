"""Keras models: real Keras applications and a user's build_keras() file are built into the collector's
graph with their variables on the PS, checked against Keras's own parameter count, and profiled on a real
1-PS/1-worker cluster like a zoo model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, SLOW_TESTS, needs_root
from tracetool.collect.model_loader import check_model_arguments, check_model_name
from tracetool.errors import ToolError
from tracetool.graph.builder import build_stepgraph_from_path
from tracetool.graph.stepgraph import DOWNLOAD

# The smallest input each application takes, so that a profile step stays well under a second here
SMALL_INPUT = {"resnet50": 32, "inception_v3": 75, "vgg16": 32, "mobilenet_v2": 32}
# The two largest take 30-40 s each to profile on two cores; the suite runs them with
# TFSIM_SLOW_TESTS=1, the other two always (depthwise convolutions and batch norm, and VGG's
# classifier sized by the image, go through the same path).
PROFILED = sorted(SMALL_INPUT) if SLOW_TESTS else ["mobilenet_v2", "vgg16"]
# Keras's parameter counts of these architectures with 10 classes (ImageNet's 1000-class figures less
# the classifier's difference); VGG-16's classifier input grows with the image, so it is computed.
TEN_CLASS_PARAMS = {"resnet50": 23_608_202, "inception_v3": 21_823_274, "mobilenet_v2": 2_270_794}

USER_KERAS_MODEL = '''
import tf_keras as keras


def build_keras(width=16):
    inputs = keras.Input(shape=(20,))
    hidden = keras.layers.Dense(width, activation="relu")(inputs)
    hidden = keras.layers.BatchNormalization()(hidden)
    outputs = keras.layers.Dense(3)(hidden)
    return keras.Model(inputs, outputs), keras.losses.CategoricalCrossentropy(from_logits=True)
'''


def profile(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetool.cli", "profile", *args, "--batch-size", "4", "--steps", "2", "--warmup", "1",
         "--untraced-steps", "2", "--out", str(tmp_path / "prof")],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )


@pytest.mark.cluster
@needs_root
@pytest.mark.parametrize("application", PROFILED)
def test_a_keras_application_profiles_with_keras_parameter_count(tmp_path: Path, application: str):
    """Profiled on a real cluster: the variables the PS holds are Keras's count_params(), the trainable
    ones are what a step downloads, and the step graph carries exactly those bytes."""
    result = profile(tmp_path, "--model", f"keras:{application}", "--model-arg",
                     f"input_size={SMALL_INPUT[application]}")
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "prof" / "meta.json").read_text())
    keras = meta["keras"]
    assert keras["keras_application"] == application and keras["input_size"] == SMALL_INPUT[application]
    if application in TEN_CLASS_PARAMS:
        assert keras["keras_count_params"] == TEN_CLASS_PARAMS[application]
    # every model variable is downloaded: batch norm's fused op reads its statistics on the worker
    assert meta["parameter_bytes"] == 4 * keras["keras_count_params"]
    assert sum(v["bytes"] for v in meta["variables"]) == 4 * keras["keras_count_params"]  # sgd: no slots
    assert keras["variables_outside_the_model"] == []
    graph = build_stepgraph_from_path(tmp_path / "prof")
    assert graph.bytes_of_kind(DOWNLOAD) == meta["parameter_bytes"]


@pytest.mark.cluster
@needs_root
def test_a_users_build_keras_file_profiles_like_a_zoo_model(tmp_path: Path):
    """A file whose build_keras() returns a Keras model and its loss: synthetic inputs and one-hot labels
    are made for it, its batch-norm moving averages are updated every step, and --model-arg reaches it."""
    path = tmp_path / "my_model.py"
    path.write_text(USER_KERAS_MODEL)
    result = profile(tmp_path, "--model", str(path), "--model-arg", "width=8")
    assert result.returncode == 0, result.stderr
    meta = json.loads((tmp_path / "prof" / "meta.json").read_text())
    # Dense 20->8 (168), batch norm over 8 (16 trainable + 16 moving), Dense 8->3 (27); on 2-D input
    # batch norm is not fused and its statistics are updated on the PS, not downloaded
    assert meta["keras"]["keras_count_params"] == 168 + 32 + 27
    assert meta["parameter_count"] == 168 + 16 + 27
    names = {v["name"] for v in meta["variables"]}
    assert any("moving_mean" in name for name in names)
    graph = build_stepgraph_from_path(tmp_path / "prof")
    assert graph.bytes_of_kind(DOWNLOAD) == meta["parameter_bytes"]


@pytest.mark.parametrize(("model", "kwargs", "words"), [
    ("keras:resnet51", {}, ["unknown Keras application", "keras:resnet50"]),
    ("keras:inception_v3", {"input_size": 32}, ["input_size of at least 75"]),
    ("keras:vgg16", {"input_size": 100_000}, ["input_size 100000"]),
    ("keras:vgg16", {"classes": 1}, ["classes must be at least 2"]),
    ("keras:mobilenet_v2", {"depth": 3}, ["--model-arg depth", "input_size, classes"]),
])
def test_bad_keras_model_choices_are_refused_before_anything_starts(model: str, kwargs: dict, words: list[str]):
    with pytest.raises(ToolError) as error:
        check_model_name(model)
        check_model_arguments(model, kwargs)
    for word in words:
        assert word in str(error.value)


def test_bad_keras_application_on_the_command_line_is_one_line_error(tmp_path: Path):
    result = profile(tmp_path, "--model", "keras:resnet51")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown Keras application" in lines[0]
    assert not (tmp_path / "prof").exists()
