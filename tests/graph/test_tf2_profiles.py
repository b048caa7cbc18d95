"""Step graphs from real TF2 profiler captures: the XPlane protobuf and its trace-viewer JSON."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from replay.engine.compiled import compile_graph
from replay.engine.link import LinkConfig
from replay.engine.loop import DurationModel, simulate
from tracetool.errors import ToolError
from tracetool.graph.builder import build_stepgraph_from_path
from tracetool.graph.read_xplane import read_xplane
from tracetool.graph.stepgraph import COMPUTE, DOWNLOAD, PS_COMPUTE, STEP_END, STEP_START, UPLOAD
from tracetool.graph.tf2_profile import HOST_AFTER, HOST_BEFORE, step_windows
from tracetool.graph.variables_file import load_variables

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tf2"
XPLANE = FIXTURES / "keras_mlp_loop.xplane.pb"
TRACE_VIEWER = FIXTURES / "keras_mlp_loop.trace.json.gz"
VARIABLES = FIXTURES / "keras_mlp_loop.variables.json"
CAPTURES = [XPLANE, TRACE_VIEWER]


def _graph(path: Path):
    return build_stepgraph_from_path(path, load_variables(VARIABLES))


def _by_name(graph):
    return {n.name: n for n in graph.nodes}


@pytest.mark.parametrize("capture", CAPTURES, ids=["xplane", "trace-viewer"])
def test_capture_becomes_a_ps_worker_step(capture: Path):
    """Every trainable variable is downloaded and its gradient uploaded, with the variables' bytes."""
    graph = _graph(capture)
    variables = json.loads(VARIABLES.read_text())["variables"]
    total = sum(v["bytes"] for v in variables)
    assert graph.bytes_of_kind(DOWNLOAD) == graph.bytes_of_kind(UPLOAD) == total == graph.model["parameter_bytes"]
    assert len(graph.node_ids_of_kind(DOWNLOAD)) == len(graph.node_ids_of_kind(UPLOAD)) == len(variables)
    assert graph.source["traced_steps"] == 3
    assert graph.source["variables"]["first_use_matched"] == graph.source["variables"]["gradient_matched"] == 4
    assert graph.source["variables"]["optimizer_scope"] == "SGD"
    assert graph.link_calibration == {}  # untimed transfers calibrate nothing
    g = graph.to_networkx()
    assert nx.is_directed_acyclic_graph(g)
    start, end = graph.node_ids_of_kind(STEP_START)[0], graph.node_ids_of_kind(STEP_END)[0]
    assert nx.descendants(g, start) | {start} == set(g.nodes)
    assert nx.ancestors(g, end) | {end} == set(g.nodes)


def test_both_formats_give_the_same_graph():
    """The trace viewer's JSON is the XPlane converted: same nodes, edges, bytes and durations."""
    from_xplane, from_json = _graph(XPLANE), _graph(TRACE_VIEWER)
    a, b = _by_name(from_xplane), _by_name(from_json)
    assert a.keys() == b.keys()
    for name, node in a.items():
        assert (node.kind, node.bytes, node.op) == (b[name].kind, b[name].bytes, b[name].op)
        assert node.duration.mean_us == pytest.approx(b[name].duration.mean_us, abs=0.01)
    named = lambda graph: {(graph.nodes[e.src].name, graph.nodes[e.dst].name) for e in graph.edges}  # noqa: E731
    assert named(from_xplane) == named(from_json)


def test_layers_wait_for_their_own_parameters_and_gradients_leave_from_their_own_ops():
    graph = _graph(XPLANE)
    nodes = {n.id: n for n in graph.nodes}
    consumers = {nodes[e.src].name: nodes[e.dst].name for e in graph.edges if nodes[e.src].kind == DOWNLOAD}
    assert consumers["edge_dense/kernel/read"] == consumers["edge_dense/bias/read"] == "sequential/dense/Relu"
    assert consumers["edge_dense_1/kernel/read"] == "sequential/dense_1/BiasAdd"
    producers = {nodes[e.dst].name: nodes[e.src].name for e in graph.edges if nodes[e.dst].kind == UPLOAD}
    assert producers["edge_gradients/dense_1/kernel/grad"].startswith("gradient_tape/sequential/dense_1/")
    assert producers["edge_gradients/dense/kernel/grad"].startswith("gradient_tape/sequential/dense/")
    # the optimizer's ops run on the PS, not on the worker
    assert not [n for n in graph.nodes if n.kind == COMPUTE and n.name.startswith("SGD/")]
    updates = [n for n in graph.nodes if n.kind == PS_COMPUTE and n.name.endswith("/update")]
    assert len(updates) == 4
    kernel, bias = _by_name(graph)["dense/kernel/update"], _by_name(graph)["dense/bias/update"]
    assert kernel.duration.mean_us == pytest.approx(bias.duration.mean_us * 802816 / 1024)


def test_steps_are_the_profilers_step_markers():
    capture = read_xplane(XPLANE)
    marked = sorted((e.start_us, e.end_us) for e in capture.events if e.name == "train")
    assert step_windows(capture) == marked
    graph = _graph(XPLANE)
    assert graph.model["traced_step_time_s"]["samples"] == pytest.approx([(b - a) / 1e6 for a, b in marked])


def test_one_worker_on_a_fast_link_takes_about_the_measured_step():
    """Replayed alone on an unlimited link, a step keeps its measured schedule: within 15% of the
    profiler's step (the optimizer, moved to the PS, no longer overlaps the backward pass)."""
    graph = _graph(XPLANE)
    assert {HOST_BEFORE, HOST_AFTER} <= _by_name(graph).keys()
    rate = simulate(compile_graph(graph), 1, LinkConfig(1e15, 1e15), durations=DurationModel(deterministic=True),
                    measured_steps=5, warmup_steps=0).steps_per_second
    measured_s = graph.model["traced_step_time_s"]["mean"]
    assert 1.0 / rate == pytest.approx(measured_s, rel=0.15)


def test_a_slow_link_delays_the_step_by_the_parameters():
    """At 100 Mbit/s the 814 KB of parameters down and gradients up cost about 65 ms each way."""
    graph = _graph(XPLANE)
    rate = simulate(compile_graph(graph), 1, LinkConfig(1e8, 1e8), durations=DurationModel(deterministic=True),
                    measured_steps=3, warmup_steps=0).steps_per_second
    link_s = 2 * 8 * graph.model["parameter_bytes"] / 1e8
    assert link_s < 1.0 / rate < link_s + 2 * graph.model["traced_step_time_s"]["mean"]


def test_variables_of_another_model_are_refused(tmp_path: Path):
    other = tmp_path / "vars.json"
    other.write_text(json.dumps([{"name": "conv1/kernel", "bytes": 100}, {"name": "fc9/bias", "bytes": 4}]))
    with pytest.raises(ToolError, match="no op name holds the layer path"):
        build_stepgraph_from_path(XPLANE, load_variables(other))


@pytest.mark.parametrize("content,words", [
    ("[]", "no variables list"),
    ('[{"name": "dense/kernel"}]', "no byte count"),
    ('[{"bytes": 4}]', "has no name"),
    ('{"variables": [{"name": "a/b", "bytes": 4, "read_by_worker": "some"}]}', "read_by_worker"),
    ("not json", "is not JSON"),
])
def test_bad_variables_files_are_refused(tmp_path: Path, content: str, words: str):
    path = tmp_path / "vars.json"
    path.write_text(content)
    with pytest.raises(ToolError, match=words):
        load_variables(path)


def test_variables_are_refused_for_traces_that_size_their_own_transfers():
    profile = Path(__file__).resolve().parents[2] / "traces" / "mlp"
    with pytest.raises(ToolError, match="carries its own transfer sizes"):
        build_stepgraph_from_path(profile / "step-000.runmeta.pb", load_variables(VARIABLES))
    with pytest.raises(ToolError, match="carries its own transfer sizes"):
        build_stepgraph_from_path(profile, load_variables(VARIABLES))


def test_profile_meta_is_a_variables_file():
    """A profile folder's meta.json lists its variables: the same sizes a TF2 capture would need."""
    profile = Path(__file__).resolve().parents[2] / "traces" / "mlp"
    variables = load_variables(profile)
    assert variables.parameter_bytes == json.loads((profile / "meta.json").read_text())["parameter_bytes"]
    assert variables.model["model"] == "mlp"
