"""The compiled kernel gives each direction of the link its own sharing model where the reference
does (replay.engine.kernel.links): ``seniority`` with fair downloads, and ``fair`` sharing of
worker interfaces that differ in one direction only (one direction the reference's seniority
link of weight 1, the other its connection-fair link)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from replay.cli import main
from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast, unsupported_setting
from replay.engine.kernel.support import SHARING_FAIR, SHARING_SENIORITY, direction_codes
from replay.engine.link import LinkConfig, target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.order import OrderPolicy, TraceOrder
from replay.engine.sharing import FairSharing, SenioritySharing, SharingModel
from replay.synthetic import chain_graph
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, kernel_calls, needs_numba
from tests.replay.engine.test_kernel_sync import discipline
from tracetool.graph.stepgraph import load_stepgraph, save_stepgraph

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
FAIR_DOWNLOADS = {
    "default": SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04, fair_downloads=True),
    "always-overtaking": SenioritySharing(seniority=1.5, overtake=1.0, fair_downloads=True),
    "groups": SenioritySharing(seniority=2.0, join_window_s=0.5, leader_weight=1.5, fair_downloads=True),
}
# Which directions' worker interfaces differ: the first three workers' caps, and the line rate
# of the direction whose caps they all equal (so that direction's caps stay one number).
INTERFACES = ["equal", "both", "downloads-only", "uploads-only"]
DISCIPLINES = ["async", "sync", "static:0.8", "saps:1"]
BANDWIDTH_BPS = 1e8


def shaped_link(model: str, interfaces: str) -> LinkConfig:
    """The test link (100 Mbit/s, ACK-coupled directions, contention losses) with worker
    interfaces that differ in the named directions."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    if interfaces == "equal":
        return target_link(graph, BANDWIDTH_BPS, latency_s=0.0005, contention_efficiency=0.95)
    if interfaces == "slow-workers":  # every worker's interface below the PS's, all equal
        return target_link(graph, BANDWIDTH_BPS, latency_s=0.0005, contention_efficiency=0.95,
                           worker_bandwidth_bps=4e7)
    if interfaces == "both":
        return target_link(graph, BANDWIDTH_BPS, latency_s=0.0005, contention_efficiency=0.95,
                           worker_bandwidths_bps=(2e7, 1e9, 5e6))
    # The first three workers' interfaces run at 30 Mbit/s, the line rate of one direction: that
    # direction's caps are all equal, the other's are not.
    link = target_link(graph, BANDWIDTH_BPS, latency_s=0.0005, contention_efficiency=0.95,
                       worker_bandwidths_bps=(3e7,) * 3)
    if interfaces == "downloads-only":
        return replace(link, upload_bandwidth_bps=3e7)
    return replace(link, download_bandwidth_bps=3e7)


def run_both(model: str, workers: int, sharing: SharingModel, link: LinkConfig, *, deterministic: bool, name: str,
             seed: int, order: OrderPolicy | None = None, record_steps: int = 0) -> tuple:
    """The kernel's and the reference's run of one configuration, workers staggered over one step."""
    compiled = compile_graph(load_stepgraph(TRACES_DIR / model / "graph.json"))
    kwargs = dict(sharing=sharing, order=order or TraceOrder(),
                  durations=DurationModel(compute_scale=1.1, deterministic=deterministic), measured_steps=3,
                  warmup_steps=2, seed=seed, stagger_s=one_step_time_s(compiled, link, sharing=sharing),
                  discipline=None if name == "async" else discipline(name, model, BANDWIDTH_BPS),
                  record_steps=record_steps)
    return simulate_fast(compiled, workers, link, **kwargs), simulate(compiled, workers, link, **kwargs)


def test_the_links_directions_are_told_apart():
    """The test links differ in the directions they are named for, and the kernel serves each
    direction by the model the reference gives it."""
    for interfaces, unequal in [("equal", (False, False)), ("both", (True, True)),
                                ("downloads-only", (True, False)), ("uploads-only", (False, True))]:
        link = shaped_link("mlp", interfaces)
        assert tuple(isinstance(link.worker_payload_caps(4, upload=u), list) for u in (False, True)) == unequal
        fair = tuple(SHARING_SENIORITY if u else SHARING_FAIR for u in unequal)
        assert direction_codes(FairSharing(), link, 4) == fair
        assert direction_codes(FAIR_DOWNLOADS["default"], link, 4) == (fair[0], SHARING_SENIORITY)


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("interfaces", INTERFACES)
@pytest.mark.parametrize("sharing", list(FAIR_DOWNLOADS))
def test_kernel_equals_reference_with_fair_downloads(sharing: str, interfaces: str, deterministic: bool):
    """Seniority with fair downloads (overtaking, always overtaking, released groups on uploads),
    every shape of interfaces, four disciplines on graphs taken in turn at 2 to 9 workers."""
    k = list(FAIR_DOWNLOADS).index(sharing) + INTERFACES.index(interfaces)
    for j, name in enumerate(DISCIPLINES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = run_both(model, 2 + (k + 2 * j) % 8, FAIR_DOWNLOADS[sharing],
                                     shaped_link(model, interfaces), deterministic=deterministic, name=name, seed=j)
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("interfaces", ["downloads-only", "uploads-only"])
@pytest.mark.parametrize("model", GRAPHS)
def test_kernel_equals_reference_with_fair_sharing_of_interfaces_unequal_one_way(model: str, interfaces: str,
                                                                                deterministic: bool):
    """fair sharing where worker interfaces differ in one direction only: every zoo graph, four
    disciplines at 1 to 8 workers (the first three workers' caps differ, so later ones share them)."""
    link = shaped_link(model, interfaces)
    for j, name in enumerate(DISCIPLINES):
        kernel, reference = run_both(model, (1, 3, 5, 8)[j], FairSharing(), link, deterministic=deterministic,
                                     name=name, seed=j + 1)
        assert_same_run(kernel, reference)


def test_kernel_holds_a_sharing_model_per_direction():
    """Neither fair downloads nor interfaces unequal one way keep a replay off the kernel."""
    assert unsupported_setting() is None
    assert unsupported_setting(sharing=FairSharing()) is None
    for sharing in FAIR_DOWNLOADS.values():
        assert unsupported_setting(sharing=sharing) is None


@needs_numba
def test_predict_with_interfaces_unequal_one_way_runs_on_the_kernel(tmp_path: Path, monkeypatch):
    """`replay predict --sharing fair --worker-bandwidths ...` on the profiled link of a graph whose
    directions differ (1 and 0.5 Gbit/s): each worker's 500 Mbit/s interface is the upload's line
    rate, so only downloads see unequal caps; it replays on the kernel under "auto"."""
    calibration = {"download_bandwidth_bps": 1e9, "upload_bandwidth_bps": 5e8, "per_transfer_overhead_s": 1e-4}
    model = {"name": "chain", "batch_size": 16, "untraced_step_time_s": {"mean": 0.004, "std": 0.0, "samples": [0.004]}}
    graph_file = tmp_path / "graph.json"
    save_stepgraph(chain_graph(compute_us=3000.0, download_bytes=500_000, upload_bytes=500_000, model=model,
                               link_calibration=calibration), graph_file)
    calls = kernel_calls(monkeypatch)
    common = ["predict", str(graph_file), "--workers", "1,3", "--bandwidth", "profiled", "--sharing", "fair",
              "--worker-bandwidths",
              "500mbit,500mbit,500mbit", "--steps", "4", "--seeds", "1", "--jobs", "1", "--no-timelines"]
    assert main([*common, "--out", str(tmp_path / "auto")]) == 0
    assert sorted(set(calls)) == [1, 3]
    assert main([*common, "--engine", "python", "--out", str(tmp_path / "python")]) == 0
    rates = [[p["steps_per_second"] for p in json.loads((tmp_path / engine / "prediction.json").read_text())["points"]]
             for engine in ("auto", "python")]
    assert rates[0] == pytest.approx(rates[1], rel=1e-9)
