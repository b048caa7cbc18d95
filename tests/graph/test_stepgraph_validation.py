"""The step-graph reader refuses every defect docs/stepgraph-schema.md rules out, in one line that
names the file, the record and the field and says how to fix it (tracetool.graph.stepgraph).

Each test damages the committed ``traces/mlp/graph.json`` in one way and reads it back.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from replay.synthetic import chain_graph
from tests.conftest import TRACES_DIR
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph, save_stepgraph

MLP = json.loads((TRACES_DIR / "mlp" / "graph.json").read_text())
COMMITTED = sorted(TRACES_DIR.glob("*/graph.json"))
FIX = "rebuild it with 'tracetool graph'"

Document = dict[str, Any]


def _node(document: Document, kind: str, nth: int = 0) -> Document:
    return [n for n in document["nodes"] if n["kind"] == kind][nth]


def refusal(tmp_path: Path, edit: Callable[[Document], object]) -> str:
    """The one-line message with which the reader refuses the mlp graph after ``edit``."""
    document = copy.deepcopy(MLP)
    edit(document)
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ToolError) as refused:
        load_stepgraph(path)
    message = str(refused.value)
    assert len(message.splitlines()) == 1, message
    assert message.startswith(str(path)), message
    return message


def assert_names(message: str, *words: str) -> None:
    for word in (*words, FIX):
        assert word in message, f"{word!r} not in {message!r}"


@pytest.mark.parametrize("path", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_every_committed_graph_loads(path: Path):
    """Every graph.json under traces/ passes every check."""
    graph = load_stepgraph(path)
    assert len(graph.nodes) > 2


def test_download_without_bytes_is_refused(tmp_path: Path):
    """A download without a byte count is refused; before, it silently carried 0 bytes."""
    message = refusal(tmp_path, lambda d: _node(d, "download").pop("bytes"))
    assert_names(message, "node 26", '"edge_22_fc3/MatMul/ReadVariableOp"', "'bytes'", "missing")


def test_negative_bytes_are_refused(tmp_path: Path):
    """A negative upload size is refused; before, the prediction changed silently."""
    message = refusal(tmp_path, lambda d: _node(d, "upload").update(bytes=-4096))
    assert_names(message, "'bytes'", "-4096")


def test_downloads_must_carry_the_parameter_bytes(tmp_path: Path):
    """One byte more on a download breaks 'downloads sum to the parameter bytes, apart from extra tensors'."""
    message = refusal(tmp_path, lambda d: _node(d, "download").update(bytes=_node(d, "download")["bytes"] + 1))
    assert_names(message, "'parameter_bytes'", "9533480", "9533481")


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [("id", True, "true"), ("id", 3.5, "3.5"), ("bytes", "4096", '"4096"'), ("bytes", 4096.5, "4096.5")],
)
def test_whole_numbers_must_be_whole(tmp_path: Path, field: str, value: object, shown: str):
    """Ids and byte counts are integers: not booleans, strings or floats with a fraction."""
    message = refusal(tmp_path, lambda d: _node(d, "download").update({field: value}))
    assert_names(message, f"'{field}'", shown, "not a whole number")


def test_strings_must_be_strings(tmp_path: Path):
    """A node name that is a list is refused, naming the node by id."""
    message = refusal(tmp_path, lambda d: d["nodes"][4].update(name=["features/shape"]))
    assert_names(message, "node 4", "'name'", "not a string")


def test_nan_duration_is_refused(tmp_path: Path):
    """A NaN mean duration is a one-line error, not a traceback."""
    message = refusal(tmp_path, lambda d: d["nodes"][4]["duration"].update(mean_us=math.nan))
    assert_names(message, "node 4", '"features/shape"', "'duration.mean_us'", "NaN")


@pytest.mark.parametrize(
    ("field", "value"), [("gap_us", -1.0), ("start_offset_us", math.inf), ("gap_us", "5"), ("start_offset_us", None)]
)
def test_gaps_and_offsets_are_finite_and_not_negative(tmp_path: Path, field: str, value: object):
    """Gaps and start offsets are finite numbers of microseconds, zero or more."""
    message = refusal(tmp_path, lambda d: d["nodes"][9].update({field: value}))
    assert_names(message, "node 9", '"labels"', f"'{field}'")


def test_negative_sample_is_refused(tmp_path: Path):
    """A negative duration sample is refused, naming its index."""

    def edit(document: Document) -> None:
        document["nodes"][9]["duration"] = {"mean_us": 5.0, "std_us": 0.0, "samples_us": [20.0, -10.0]}

    assert_names(refusal(tmp_path, edit), "node 9", "'duration.samples_us[1]'", "-10")


def test_mean_must_agree_with_samples(tmp_path: Path):
    """A mean that is not the mean of its samples is refused; one within rounding is not."""
    message = refusal(tmp_path, lambda d: d["nodes"][9]["duration"].update(mean_us=12.0))
    assert_names(message, "node 9", "'duration.mean_us'", "average")
    document = copy.deepcopy(MLP)
    document["nodes"][10]["duration"]["mean_us"] *= 1 + 1e-9
    path = tmp_path / "rounded.json"
    path.write_text(json.dumps(document))
    assert load_stepgraph(path).nodes[10].duration.mean_us == document["nodes"][10]["duration"]["mean_us"]


def test_step_time_mean_must_agree_with_samples(tmp_path: Path):
    """The model's untraced step time has a mean that is the mean of its samples."""
    message = refusal(tmp_path, lambda d: d["model"]["untraced_step_time_s"].update(mean=0.02))
    assert_names(message, "model", "'untraced_step_time_s.mean'")


def test_absurd_bytes_are_refused(tmp_path: Path):
    """A transfer of more than 2**53 bytes is refused (the replay could not count it exactly)."""
    message = refusal(tmp_path, lambda d: _node(d, "upload").update(bytes=2**53 + 1))
    assert_names(message, "'bytes'", "above 2**53")


def test_durations_over_a_day_are_refused(tmp_path: Path):
    """A duration sample of more than a day is refused."""

    def edit(document: Document) -> None:
        document["nodes"][9]["duration"] = {"mean_us": 1e11, "std_us": 0.0, "samples_us": [1e11]}

    assert_names(refusal(tmp_path, edit), "node 9", "'duration.mean_us'", "above 8.64e+10 us (a day)")


@pytest.mark.parametrize("key", ["model", "source", "link_calibration"])
@pytest.mark.parametrize("value", [None, [], "x"])
def test_top_level_objects_must_be_objects(tmp_path: Path, key: str, value: object):
    """model, source and link_calibration are objects: null, a list or a string is refused."""
    assert_names(refusal(tmp_path, lambda d: d.update({key: value})), f"'{key}'", "not an object")


@pytest.mark.parametrize("value", [math.nan, "1e9", -5.0, True, 10.0])
def test_calibration_values_are_finite_numbers(tmp_path: Path, value: object):
    """Calibrated bandwidths are finite numbers: 0 (not calibrated) or a plausible link rate."""
    message = refusal(tmp_path, lambda d: d["link_calibration"].update(download_bandwidth_bps=value))
    assert_names(message, "link_calibration", "'download_bandwidth_bps'")


def test_model_facts_have_their_types(tmp_path: Path):
    """A batch size given as text is refused in the model record."""
    assert_names(refusal(tmp_path, lambda d: d["model"].update(batch_size="32")), "model", "'batch_size'")


def test_step_rate_is_positive_and_plausible(tmp_path: Path):
    """An untraced step rate implying steps longer than a day is refused."""
    message = refusal(tmp_path, lambda d: d["model"].update(untraced_steps_per_second=1e-9))
    assert_names(message, "model", "'untraced_steps_per_second'", "over a day")


@pytest.mark.parametrize(("field", "value"), [("bytes", None), ("direction", "sideways"), ("tensor", 7)])
def test_extra_tensors_are_checked(tmp_path: Path, field: str, value: object):
    """Each extra tensor has a name, a byte count and a direction."""
    message = refusal(tmp_path, lambda d: d["extra_tensors"][0].update({field: value}))
    assert_names(message, "extra_tensors #0", f"'{field}'")


def test_only_transfers_carry_bytes(tmp_path: Path):
    """A compute op with bytes is refused: the schema gives other ops 0 bytes."""
    assert_names(refusal(tmp_path, lambda d: d["nodes"][9].update(bytes=10)), "node 9", "'bytes'", "only transfers")


def test_unknown_node_kind_is_refused(tmp_path: Path):
    """A node kind outside the schema's list is refused, naming the node."""
    message = refusal(tmp_path, lambda d: d["nodes"][9].update(kind="gpu_compute"))
    assert_names(message, "node 9", "'kind'", "gpu_compute")


def test_unknown_edge_kind_is_refused(tmp_path: Path):
    """Edges are data or control edges."""
    assert_names(refusal(tmp_path, lambda d: d["edges"][2].update(kind="maybe")), "edge #2", "'kind'", "maybe")


def test_edge_to_a_missing_node_is_refused(tmp_path: Path):
    """An edge to a node id past the end names the edge and the valid range."""
    message = refusal(tmp_path, lambda d: d["edges"][2].update(dst=75))
    assert_names(message, "edge #2", "'dst'", "0..74")


def test_cycle_names_the_file_a_node_and_the_fix(tmp_path: Path):
    """A cycle is refused naming the file, a node on it (id and name) and the fix."""
    message = refusal(tmp_path, lambda d: d["edges"].append({"src": 9, "dst": 0, "kind": "data"}))
    assert_names(message, "cycle", "node ")
    assert '("' in message


def test_duplicate_node_id_is_refused(tmp_path: Path):
    """Two nodes with one id are refused: ids are 0..n-1 in list order."""
    message = refusal(tmp_path, lambda d: d["nodes"][5].update(id=4))
    assert_names(message, "node 4", "'id'", "position 5", "0..n-1")


def test_node_off_every_path_is_refused(tmp_path: Path):
    """An extra node that no edge reaches is named as off the path from step_start to step_end."""

    def edit(document: Document) -> None:
        extra = copy.deepcopy(document["nodes"][9])
        document["nodes"].append({**extra, "id": 75, "name": "lonely"})

    assert_names(refusal(tmp_path, edit), "node 75", '"lonely"', "not on a path")


def test_second_step_end_is_refused(tmp_path: Path):
    """A step has exactly one end."""
    assert_names(refusal(tmp_path, lambda d: d["nodes"][9].update(kind="step_end")), "one step_end")


def test_names_with_line_breaks_stay_on_one_line(tmp_path: Path):
    """A node name with a newline is shown escaped, so the message stays one line."""

    def edit(document: Document) -> None:
        document["nodes"][9]["name"] = "two\\nlines\u2028here"
        document["nodes"][9]["gap_us"] = -1

    assert_names(refusal(tmp_path, edit), "node 9", "'gap_us'")


def test_schema_version_true_is_not_version_one(tmp_path: Path):
    """A boolean schema version is not mistaken for version 1."""
    assert_names(refusal(tmp_path, lambda d: d.update(schema_version=True)), "schema version true")


@pytest.mark.parametrize(
    "text", ["[" * 100_000, '{"schema": ' + "1" * 5000 + "}"], ids=["nested too deep", "integer too long"]
)
def test_unreadable_json_is_one_line(tmp_path: Path, text: str):
    """JSON nested too deep or with an integer too long to read is refused, not a traceback."""
    path = tmp_path / "graph.json"
    path.write_text(text)
    with pytest.raises(ToolError, match="not valid JSON"):
        load_stepgraph(path)


def test_tolerated_forms_still_load(tmp_path: Path):
    """Integral floats for whole numbers and a repeated (src, dst) pair of another kind are accepted."""
    document = copy.deepcopy(MLP)
    download = _node(document, "download")
    download["bytes"] = float(download["bytes"])
    first = document["edges"][0]
    document["edges"].append({**first, "kind": "data" if first["kind"] == "control" else "control"})
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(document))
    graph = load_stepgraph(path)
    assert graph.nodes[download["id"]].bytes == int(download["bytes"])
    assert len(graph.edges) == len(MLP["edges"]) + 1


def test_parameter_bytes_as_integral_float_are_still_checked(tmp_path: Path):
    """parameter_bytes written as 9533480.0 is read as an integer, so the download sum is still checked."""

    def edit(document: Document) -> None:
        document["model"]["parameter_bytes"] = float(document["model"]["parameter_bytes"] + 8)

    assert_names(refusal(tmp_path, edit), "'parameter_bytes'", "9533488")


def test_save_refuses_to_write_an_invalid_graph(tmp_path: Path):
    """A graph the reader would refuse is never written: write and read check the same rules."""
    graph = chain_graph()
    graph.nodes[2] = replace(graph.nodes[2], gap_us=math.nan)
    out = tmp_path / "graph.json"
    with pytest.raises(ToolError, match="'gap_us'.*nothing was written"):
        save_stepgraph(graph, out)
    assert not out.exists()
