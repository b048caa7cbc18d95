"""The compiled kernel runs the workers' compute on one machine's shared cores
(replay.engine.kernel.shared_cores) as the reference's ``SharedCores`` does: the same run, to the
bit, so a local validation's predictions replay on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast
from replay.engine.link import target_link
from replay.engine.loop import simulate
from replay.sync.disciplines import sync_discipline
from tests.conftest import REPO_ROOT, TRACES_DIR
from tests.replay.engine.test_kernel import assert_same_run, both, needs_numba
from tests.replay.engine.test_kernel_sync import discipline
from tracetool.graph.stepgraph import load_stepgraph


@needs_numba
@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("sharing", ["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "inception", "mlp"])
def test_kernel_equals_reference_on_shared_cores(model: str, sharing: str, cores: int):
    """Mean and sampled durations, on a contended 100 Mbit/s link and on a 10 Gbit/s one where
    the compute decides the rate and four workers outnumber the cores."""
    for workers, deterministic, bandwidth in ((3, True, 1e8), (4, False, 1e8), (4, False, 1e10)):
        kernel, reference = both(TRACES_DIR / model / "graph.json", workers, sharing, deterministic=deterministic,
                                 seed=workers, bandwidth_bps=bandwidth, shared_cores=cores)
        assert_same_run(kernel, reference)


@needs_numba
def test_shared_cores_slow_the_kernel_where_compute_decides():
    """alexnet's four workers behind a 10 Gbit/s link, where the compute decides: on one core they
    step about half as fast as on two, and on two about half as fast as on a machine each."""
    rates = {}
    for cores in (0, 1, 2):
        kernel, _ = both(TRACES_DIR / "alexnet" / "graph.json", 4, "fair", deterministic=True,
                         bandwidth_bps=1e10, shared_cores=cores)
        rates[cores] = kernel.steps_per_second
    assert rates[1] < 0.6 * rates[2] and rates[2] < 0.75 * rates[0]


@needs_numba
@pytest.mark.parametrize("name", ["sync:2", "backup", "ssp:1"])
def test_kernel_records_the_reference_timeline_on_shared_cores(name: str):
    """Disciplines that hold workers back but interrupt no step, with their timelines recorded."""
    kernel, reference = both(TRACES_DIR / "vgg" / "graph.json", 4, "seniority", deterministic=False, seed=3,
                             bandwidth_bps=2e8, steps=4, record_steps=2, shared_cores=2,
                             discipline=discipline(name, "vgg", 2e8))
    assert reference.timeline is not None and kernel.timeline == reference.timeline
    assert_same_run(kernel, reference)


@needs_numba
def test_a_discipline_that_interrupts_steps_is_refused_on_shared_cores_by_both_engines():
    graph = load_stepgraph(TRACES_DIR / "mlp" / "graph.json")
    compiled = compile_graph(graph)
    link = target_link(graph, 1e8)
    cutoff = sync_discipline("cutoff", cutoff="static:0.05")
    for engine in (simulate_fast, simulate):
        with pytest.raises(ValueError, match="which interrupts steps"):
            engine(compiled, 2, link, shared_cores=2, discipline=cutoff)
        with pytest.raises(ValueError, match="0 \\(none\\) or more"):
            engine(compiled, 2, link, shared_cores=-1)


@needs_numba
def test_predict_on_shared_cores_gives_the_python_engines_prediction(tmp_path: Path):
    """`replay predict --shared-cores 2` on the kernel writes the Python engine's points."""
    graph = TRACES_DIR / "resnet" / "graph.json"
    points = {}
    for engine in ("compiled", "python"):
        out = tmp_path / engine
        result = subprocess.run(
            [sys.executable, "-m", "replay.cli", "predict", str(graph), "--workers", "1,3", "--bandwidth", "1gbit",
             "--shared-cores", "2", "--seeds", "2", "--steps", "6", "--no-timelines", "--engine", engine,
             "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
        assert result.returncode == 0, result.stderr
        points[engine] = [(p["workers"], p["steps_per_second"])
                          for p in json.loads((out / "prediction.json").read_text())["points"]]
    assert points["compiled"] == points["python"]
