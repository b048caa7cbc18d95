"""A shaper's token bucket (``LinkConfig.burst_bytes``): a direction that idled passes up to the
bucket's depth at once when a transfer starts there, in the reference engine and the kernel alike."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from replay.engine.compiled import compile_graph
from replay.engine.kernel import simulate_fast, unsupported_setting
from replay.engine.link import target_link
from replay.engine.loop import DurationModel, one_step_time_s, simulate
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing
from replay.synthetic import chain_graph, random_graph
from tests.conftest import TRACES_DIR
from tests.replay.engine.test_kernel import assert_same_run, needs_numba
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph

BURST = 16384


def _one_worker_step_s(burst_bytes: float, compute_us: float = 10_000.0) -> float:
    graph = chain_graph(compute_us=compute_us, download_bytes=400_000, upload_bytes=400_000)
    link = target_link(graph, 25e6, burst_bytes=burst_bytes)
    run = simulate(compile_graph(graph), 1, link, sharing=FairSharing(), durations=DurationModel(deterministic=True),
                   measured_steps=6, warmup_steps=1)
    return 1.0 / run.steps_per_second


def test_a_lone_worker_saves_the_bucket_each_way_once_it_has_refilled():
    """One worker's step downloads, computes and uploads: each direction idles for the rest of the
    step, far longer than the 5 ms the bucket takes to refill at 25mbit, so every step passes a
    full bucket each way at once, two buckets' time at the payload rate."""
    plain = _one_worker_step_s(0.0)
    link = target_link(chain_graph(), 25e6, burst_bytes=BURST)
    saved = 2 * link.burst_payload_bits() / link.download_payload_bps()
    assert _one_worker_step_s(BURST) == pytest.approx(plain - saved, rel=1e-6)


def test_a_bucket_that_refills_slower_than_the_step_saves_only_what_refilled():
    """A 2 MB bucket refills at 25mbit in 0.67 s, longer than the step: each direction gets back
    only what its idle time refills, less than the whole bucket (and the first step the full one)."""
    plain = _one_worker_step_s(0.0)
    deep = _one_worker_step_s(2_000_000)
    assert plain - deep > 0.0
    link = target_link(chain_graph(), 25e6, burst_bytes=2_000_000)
    assert plain - deep < 2 * 400_000 * 8 / link.download_payload_bps()


def test_the_bucket_must_be_a_size():
    with pytest.raises(ToolError, match="link burst must be between 0 and"):
        target_link(chain_graph(), 25e6, burst_bytes=-1.0)
    with pytest.raises(ToolError, match="link burst"):
        target_link(chain_graph(), 25e6, burst_bytes=5e9)


@needs_numba
@pytest.mark.parametrize("sharing", [FairSharing(), FifoSharing(),
                                     SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04)],
                         ids=["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "inception"])
def test_kernel_equals_reference_behind_a_bucket(model: str, sharing: object):
    """Three staggered workers with sampled durations at 25mbit behind a 64 KB bucket, with a
    request queue and contention losses besides."""
    graph = load_stepgraph(TRACES_DIR / model / "graph.json")
    compiled = compile_graph(graph)
    link = replace(target_link(graph, 25e6, latency_s=0.005, contention_efficiency=0.85, burst_bytes=65536),
                   request_queue_s=0.07)
    assert unsupported_setting(sharing=sharing, link=link, compiled=compiled) is None
    kwargs = dict(sharing=sharing, durations=DurationModel(deterministic=False), measured_steps=4, warmup_steps=2,
                  seed=5, stagger_s=one_step_time_s(compiled, link, sharing=sharing))
    kernel, reference = simulate_fast(compiled, 3, link, **kwargs), simulate(compiled, 3, link, **kwargs)
    assert_same_run(kernel, reference)
    assert simulate_fast(compiled, 3, replace(link, burst_bytes=0.0), **kwargs).end_time_s != kernel.end_time_s


@needs_numba
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_equals_reference_behind_a_bucket_on_random_graphs(seed: int):
    """Random layered steps, some transfers smaller than the bucket (they pass whole, at once)."""
    graph = random_graph(random.Random(seed), layers=5, lanes=2)
    compiled = compile_graph(graph)
    link = target_link(graph, 2e7, latency_s=0.001, burst_bytes=max(compiled.bytes) // 2)
    kwargs = dict(sharing=SenioritySharing(), durations=DurationModel(), measured_steps=6, warmup_steps=1, seed=seed,
                  stagger_s=0.01, record_steps=2)
    assert_same_run(simulate_fast(compiled, 4, link, **kwargs), simulate(compiled, 4, link, **kwargs))


def test_replay_predict_takes_a_link_burst(tmp_path: Path, capsys):
    """``--link-burst`` reaches the prediction's link and its table; a lone worker steps sooner behind it."""
    from replay.cli import main

    common = [str(TRACES_DIR / "mlp" / "graph.json"), "--workers", "1", "--bandwidth", "10mbit", "--seeds", "1",
              "--steps", "4", "--no-timelines", "--deterministic"]
    assert main(["predict", *common, "--link-burst", "64kib", "--out", str(tmp_path / "b")]) == 0
    assert "a 64 KiB bucket passes at once after idle" in capsys.readouterr().out
    assert main(["predict", *common, "--out", str(tmp_path / "plain")]) == 0
    burst, plain = (json.loads((tmp_path / name / "prediction.json").read_text()) for name in ("b", "plain"))
    assert burst["link"]["burst_bytes"] == 65536 and plain["link"]["burst_bytes"] == 0
    assert burst["points"][0]["steps_per_second"] > plain["points"][0]["steps_per_second"]


@pytest.mark.parametrize("value,words", [("lots", "cannot read size"), ("2gib", "link burst must be between 0 and")])
def test_a_link_burst_that_cannot_be_read_is_refused_in_one_line(tmp_path: Path, value: str, words: str):
    result = subprocess.run([sys.executable, "-m", "replay.cli", "predict", str(TRACES_DIR / "mlp" / "graph.json"),
                             "--bandwidth", "100mbit", "--link-burst", value, "--out", str(tmp_path / "p")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and words in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists()
