"""Step graphs built from the committed zoo traces and from real traces of other projects."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from tests.conftest import committed_profiles, real_trace_files
from tracetool.errors import ToolError
from tracetool.graph.builder import build_stepgraph_from_path
from tracetool.graph.stepgraph import COMPUTE, DOWNLOAD, STEP_END, STEP_START, UPLOAD, load_stepgraph

PROFILES = committed_profiles()


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_profile_graph_invariants(profile: Path):
    """Every zoo graph is a DAG from step_start to step_end whose downloads carry exactly the parameters."""
    meta = json.loads((profile / "meta.json").read_text())
    graph = build_stepgraph_from_path(profile)
    g = graph.to_networkx()
    assert nx.is_directed_acyclic_graph(g)
    start, end = graph.node_ids_of_kind(STEP_START)[0], graph.node_ids_of_kind(STEP_END)[0]
    assert nx.descendants(g, start) | {start} == set(g.nodes)
    assert nx.ancestors(g, end) | {end} == set(g.nodes)
    extra_down = sum(e["bytes"] for e in graph.extra_tensors if e["direction"] == "download")
    assert graph.bytes_of_kind(DOWNLOAD) - extra_down == meta["parameter_bytes"]
    extra_up = sum(e["bytes"] for e in graph.extra_tensors if e["direction"] == "upload")
    # at most one gradient per parameter: grappler may merge identical gradients (ResNet's two bias
    # gradients of a residual sum are one tensor, sent once and applied twice)
    assert 0.95 * meta["parameter_bytes"] <= graph.bytes_of_kind(UPLOAD) - extra_up <= meta["parameter_bytes"]


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_every_transfer_feeds_or_is_fed_by_compute(profile: Path):
    """Each download reaches a worker compute op; each non-control upload comes from one."""
    graph = build_stepgraph_from_path(profile)
    g = graph.to_networkx()
    kinds = {n.id: n.kind for n in graph.nodes}
    for node in graph.nodes:
        if node.kind == DOWNLOAD and node.bytes > 0:
            assert any(kinds[s] == COMPUTE for s in g.successors(node.id)), node.name
        if node.kind == UPLOAD and node.tensor.startswith("gradients"):
            assert any(kinds[p] == COMPUTE for p in g.predecessors(node.id)), node.name


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_durations_have_one_sample_per_traced_step(profile: Path):
    """Ops seen in every traced step keep one duration sample per step, and a lane."""
    graph = build_stepgraph_from_path(profile)
    steps = graph.source["traced_steps"]
    compute = [n for n in graph.nodes if n.kind == COMPUTE]
    assert compute
    assert max(len(n.duration.samples_us) for n in compute) == steps
    assert all("#thread:" in n.lane for n in compute)


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_chrome_timeline_and_runmetadata_agree(profile: Path):
    """The collector's Chrome timeline of a step gives the same transfers as its RunMetadata."""
    from_pb = build_stepgraph_from_path(profile / "step-000.runmeta.pb")
    from_chrome = build_stepgraph_from_path(profile / "step-000.timeline.json")
    transfers = lambda g: sorted((n.kind, n.name, n.bytes) for n in g.nodes if n.kind in (DOWNLOAD, UPLOAD))  # noqa: E731
    assert transfers(from_pb) == transfers(from_chrome)
    assert len(from_pb.nodes) == len(from_chrome.nodes)


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_committed_graph_matches_a_rebuild(profile: Path):
    """The committed graph.json loads under the current schema and matches a fresh build of its traces."""
    committed = load_stepgraph(profile / "graph.json")
    rebuilt = build_stepgraph_from_path(profile)
    assert [(n.kind, n.name, n.bytes) for n in committed.nodes] == [(n.kind, n.name, n.bytes) for n in rebuilt.nodes]


def test_link_calibration_is_positive():
    """The profiling link's calibrated bandwidths and overhead are positive figures."""
    graph = build_stepgraph_from_path(PROFILES[0])
    cal = graph.link_calibration
    assert cal["download_bandwidth_bps"] > 0 and cal["upload_bandwidth_bps"] > 0
    assert cal["per_transfer_overhead_s"] > 0


REAL = real_trace_files()


@pytest.mark.parametrize("trace", REAL, ids=[p.name for p in REAL])
def test_real_traces_are_read_or_refused_in_one_line(trace: Path):
    """Foreign timelines either give a valid graph or a one-line error saying what is missing."""
    try:
        graph = build_stepgraph_from_path(trace)
    except ToolError as exc:
        assert "\n" not in str(exc)
        assert "RecvTensor" in str(exc)  # the distributed one lacks transfer sizes
        return
    graph.check_invariants()
    assert not graph.source["has_ps_transfers"]
    assert len(graph.node_ids_of_kind(COMPUTE)) > 10


# A real TF 1.x GPU timeline (github.com/ikhlestov/tensorflow_profiling, MIT; see its .source.txt)
GPU_TIMELINE = (Path(__file__).resolve().parent.parent / "fixtures" / "gpu"
                / "ikhlestov_gpu_mnist_mlp_timeline_02_step_0.json")


def test_gpu_trace_keeps_stream_lanes():
    """The TF 1.x GPU timeline's kernels land on their GPU stream lanes, not on stream:all."""
    graph = build_stepgraph_from_path(GPU_TIMELINE)
    lanes = {n.lane for n in graph.nodes if n.kind == COMPUTE}
    assert any(lane.endswith("#stream:12") for lane in lanes)
    assert not any(lane.endswith("stream:all") for lane in lanes)


def test_an_op_with_several_gpu_kernels_lasts_from_the_first_kernel_to_the_last():
    """SoftmaxCrossEntropyWithLogits launches 7 kernels on stream 12, from 1490280136429981 us to
    1490280136430247 us (the last, 13 us long, starts at ...234): 266 us, not its longest kernel's 13."""
    graph = build_stepgraph_from_path(GPU_TIMELINE)
    events = json.loads(GPU_TIMELINE.read_text())["traceEvents"]
    streams = {e["pid"] for e in events if e.get("ph") == "M"
               and e["args"].get("name", "").startswith("/gpu:0/stream:") and "stream:all" not in e["args"]["name"]}
    kernels: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e["pid"] in streams:
            kernels.setdefault(e["args"]["name"], []).append((e["ts"], e["ts"] + e["dur"]))
    by_name = {n.name: n for n in graph.nodes if n.kind == COMPUTE and "GPU" in n.device}
    assert by_name["SoftmaxCrossEntropyWithLogits"].duration.mean_us == pytest.approx(266.0)
    for name, spans in kernels.items():
        span = max(end for _, end in spans) - min(start for start, _ in spans)
        assert by_name[name].duration.mean_us == pytest.approx(span), name


def test_host_and_gpu_copies_sit_between_the_ops_they_join():
    """Each MEMCPYHtoD/DtoH event (``edge_<n>_<producer>``) follows the op whose tensor it copies and
    feeds the ops that name that tensor as ``<producer>/_<k>``: the 51 us copy of the input batch
    comes before the first layer's MatMul and its weight gradient."""
    graph = build_stepgraph_from_path(GPU_TIMELINE)
    nodes = {n.id: n for n in graph.nodes}
    preds: dict[str, set[str]] = {}
    succs: dict[str, set[str]] = {}
    for e in graph.edges:
        preds.setdefault(nodes[e.dst].name, set()).add(nodes[e.src].name)
        succs.setdefault(nodes[e.src].name, set()).add(nodes[e.dst].name)
    copies = [n for n in graph.nodes if n.op.startswith("MEMCPY")]
    assert len(copies) == 6
    assert all(succs[c.name] != {"step_end"} for c in copies)
    batch = "edge_184__recv_Placeholder_0"
    assert nodes[[n.id for n in copies if n.name == batch][0]].duration.mean_us == 51.0
    assert succs[batch] == {"layer_1/fully_connected/MatMul",
                            "gradients/layer_1/fully_connected/MatMul_grad/MatMul_1"}
    assert preds["edge_9_gradients/Mean_grad/Prod"] == {"gradients/Mean_grad/Prod"}
    assert preds["gradients/Mean_grad/floordiv"] >= {"edge_9_gradients/Mean_grad/Prod"}
