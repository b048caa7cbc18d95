"""The compiled kernel replays what the reference engine replays (replay.engine.kernel), and
sweeps fall back to the reference where it cannot."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

import replay.sweep as sweep
from replay.cli import main
from replay.engine.compiled import compile_graph
from replay.engine.kernel import KernelUnavailable, kernel_unavailable, simulate_fast, unsupported_setting
from replay.engine.link import LinkConfig, target_link
from replay.engine.loop import DurationModel, ReplayTimeOverflow, RunResult, one_step_time_s, simulate
from replay.engine.order import PriorityOrder, RandomOrder, TraceOrder
from replay.engine.sharing import FairSharing, FifoSharing, SenioritySharing, TransferFairSharing
from replay.sweep import ReplaySettings, predict
from replay.sync.base import AsyncTraining, SyncDiscipline
from replay.sync.disciplines import sync_discipline
from tests.conftest import REPO_ROOT, TRACES_DIR
from tracetool.errors import ToolError
from tracetool.graph.stepgraph import load_stepgraph

needs_numba = pytest.mark.skipif(kernel_unavailable() is not None, reason="numba cannot run here")

ZOO_GRAPHS = sorted(TRACES_DIR.glob("*/graph.json"))
# seniority as the defaults give it: weight 2, overtakes with chance min(0.4, 0.04 s / T)
SHARING = {"fair": FairSharing(), "fifo": FifoSharing(),
           "seniority": SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04),
           "seniority-always-overtaking": SenioritySharing(seniority=1.5, overtake=1.0)}


def assert_same_run(kernel: RunResult, reference: RunResult) -> None:
    """Every field agrees: floats within 1e-9 relative, integers and counts exactly."""
    for field in fields(RunResult):
        got, want = getattr(kernel, field.name), getattr(reference, field.name)
        if isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-9, abs=0.0) or got == want, field.name
        elif isinstance(want, tuple) and want and isinstance(want[0], float):
            assert got == pytest.approx(want, rel=1e-9, abs=0.0), field.name
        else:
            assert got == want, field.name


def both(graph_path: Path, workers: int, sharing: str, *, deterministic: bool, seed: int = 0,
         order: object = None, bandwidth_bps: float = 1e8, steps: int = 3,
         discipline: SyncDiscipline | None = None, record_steps: int = 0,
         shared_cores: int = 0) -> tuple[RunResult, RunResult]:
    """The reference's and the kernel's run of one configuration on a shaped, contended link,
    workers staggered over one step as a sweep starts them (their first ``record_steps`` recorded;
    their compute on ``shared_cores`` cores, 0: a machine each)."""
    graph = load_stepgraph(graph_path)
    compiled = compile_graph(graph)
    # ACK coupling and contention efficiency exercise every capacity change of a direction.
    link = target_link(graph, bandwidth_bps, latency_s=0.0005, contention_efficiency=0.95)
    kwargs = dict(sharing=SHARING[sharing], order=order or TraceOrder(),
                  durations=DurationModel(compute_scale=1.1, deterministic=deterministic), measured_steps=steps,
                  warmup_steps=2, seed=seed, stagger_s=one_step_time_s(compiled, link, sharing=SHARING[sharing]),
                  discipline=discipline, record_steps=record_steps, shared_cores=shared_cores)
    return simulate_fast(compiled, workers, link, **kwargs), simulate(compiled, workers, link, **kwargs)


@needs_numba
@pytest.mark.parametrize("workers", [1, 3, 8])
@pytest.mark.parametrize("sharing", ["fair", "fifo", "seniority"])
@pytest.mark.parametrize("graph_path", ZOO_GRAPHS, ids=[p.parent.name for p in ZOO_GRAPHS])
def test_kernel_equals_reference_with_mean_durations(graph_path: Path, sharing: str, workers: int):
    """Every zoo graph, fair, fifo and seniority, 1 to 8 workers: the kernel's run is the reference's."""
    kernel, reference = both(graph_path, workers, sharing, deterministic=True)
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("sharing", ["fair", "fifo", "seniority"])
@pytest.mark.parametrize("model", ["alexnet", "inception"])
def test_kernel_draws_the_reference_durations(model: str, sharing: str, seed: int):
    """Sampled durations come from the same NumPy stream in the same order: the same run, not a
    statistically similar one (start offsets and every step's draws included)."""
    kernel, reference = both(TRACES_DIR / model / "graph.json", 4, sharing, deterministic=False, seed=seed)
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize(("sharing", "order"), [("fifo", PriorityOrder()), ("fair", RandomOrder())])
def test_kernel_follows_the_other_orders(sharing: str, order: object):
    """fifo serves in first-use order as the reference does; under fair the random order is never consulted."""
    kernel, reference = both(TRACES_DIR / "resnet" / "graph.json", 3, sharing, deterministic=True, order=order)
    assert_same_run(kernel, reference)


@needs_numba
def test_kernel_runs_many_workers_as_the_reference_does():
    """64 workers on a 1 Gbit/s link, where the fair link carries dozens of connections at once."""
    kernel, reference = both(TRACES_DIR / "mlp" / "graph.json", 64, "fair", deterministic=False,
                             bandwidth_bps=1e9, steps=2)
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("workers", [4, 12])
def test_kernel_overtakes_as_the_reference_does(workers: int):
    """Every join of a busy direction overtakes: the kernel reproduces the reference's draws from
    its Python generator (random(), then randrange) and the ranks they give."""
    kernel, reference = both(TRACES_DIR / "vgg" / "graph.json", workers, "seniority-always-overtaking",
                             deterministic=False, seed=5, bandwidth_bps=1e9, steps=2)
    assert_same_run(kernel, reference)


@needs_numba
def test_kernel_repeats_a_run_that_ran_out_of_random_words(monkeypatch):
    """A run given too few of the generator's words is repeated with more and still gives the
    reference's run (durations included: the repeat draws them again from the same state)."""
    from replay.engine.kernel import entry

    calls = []
    real = entry._link_words

    def few(seed: int, count: int):
        calls.append(count)
        return real(seed, 3 if len(calls) == 1 else count)

    monkeypatch.setattr(entry, "_link_words", few)
    kernel, reference = both(TRACES_DIR / "alexnet" / "graph.json", 6, "seniority-always-overtaking",
                             deterministic=False, seed=2)
    assert len(calls) >= 2
    assert_same_run(kernel, reference)


@pytest.mark.parametrize("count", [0, 1, 7, 1000])
def test_link_words_are_the_generators_words_in_order(count: int):
    """The overtake draws' words, taken in one wide getrandbits call, are the words single
    getrandbits(32) calls of the reference's link generator return, in their order."""
    import random

    from replay.engine.kernel import entry

    generator = random.Random("links-3")
    assert entry._link_words(3, count).tolist() == [generator.getrandbits(32) for _ in range(count)]


@needs_numba
def test_kernel_reports_overflowing_times():
    """On a 1e-305 bit/s link the kernel raises the reference's ReplayTimeOverflow instead of stalling."""
    compiled = compile_graph(load_stepgraph(TRACES_DIR / "mlp" / "graph.json"))
    with pytest.raises(ReplayTimeOverflow, match="times overflow"):
        simulate_fast(compiled, 2, LinkConfig(1e-305, 1e-305), measured_steps=2)


class CustomDiscipline(AsyncTraining):
    """A discipline the kernel does not know: a subclass of one it does is another discipline."""

    name = "custom"


class CustomSharing(FairSharing):
    """A sharing model the kernel does not know (fair's subclasses it knows are built-in models)."""

    name = "custom-sharing"


class CustomOrder(TraceOrder):
    """A transfer order the kernel does not know."""

    name = "custom-order"


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ({"sharing": CustomSharing()}, "--sharing custom-sharing"),
        ({"discipline": CustomDiscipline()}, "--sync custom"),
        ({"order": CustomOrder()}, "--order custom-order"),
    ],
)
def test_kernel_names_what_it_does_not_hold(setting: dict, words: str):
    """Each configuration outside the kernel is refused by name, and unsupported_setting names it."""
    assert words in unsupported_setting(**setting)
    arguments = {"workers": 3, "link": LinkConfig(1e9, 1e9), **setting}
    compiled = compile_graph(load_stepgraph(TRACES_DIR / "mlp" / "graph.json"))
    with pytest.raises(ValueError, match=words):
        simulate_fast(compiled, **arguments)


def test_kernel_holds_every_built_in_sharing_model():
    """Every built-in sharing model, the default included, with and without a stream cap."""
    for sharing in (None, FairSharing(), FifoSharing(), SenioritySharing(overtake=0.3), TransferFairSharing(),
                    FairSharing(max_streams=3), SenioritySharing(max_streams=2), TransferFairSharing(max_streams=4)):
        assert unsupported_setting(sharing=sharing, order=PriorityOrder(),
                                   discipline=sync_discipline("async", None, None, None)) is None


CHAIN = TRACES_DIR / "mlp" / "graph.json"


def small_prediction(engine: str, sharing: str = "fair") -> list[float]:
    settings = ReplaySettings(sharing=sharing, engine=engine, measured_steps=3, seeds=2, jobs=1, calibrate=False)
    graph = load_stepgraph(CHAIN)
    return [p.steps_per_second for p in predict(graph, [1, 3], target_link(graph, 1e8), settings).points]


def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The worker counts of the sweeps' replays on the kernel from now on, in the order run."""
    calls = []
    real = sweep.simulate_fast

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "simulate_fast", counted)
    return calls


@needs_numba
def test_auto_uses_the_kernel_where_it_can(monkeypatch):
    """Under "auto" a fair async sweep runs on the kernel and predicts what the Python engine predicts."""
    calls = kernel_calls(monkeypatch)
    assert small_prediction("auto") == pytest.approx(small_prediction("python"), rel=1e-9)
    assert sorted(set(calls)) == [1, 3]


def lacking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the sweeps' kernel lack the replays' sharing model, as it would a Python policy object
    (every setting the command line gives is the kernel's)."""
    monkeypatch.setattr(sweep, "unsupported_setting", lambda **settings: f"--sharing {settings['sharing'].name}")


def test_auto_falls_back_for_what_the_kernel_lacks(monkeypatch):
    """Under "auto" a sharing model the kernel lacks replays on the Python engine; the kernel is never called."""
    def refuse(*args, **kwargs):
        raise AssertionError("the kernel was called")

    lacking(monkeypatch)
    monkeypatch.setattr(sweep, "simulate_fast", refuse)
    monkeypatch.setattr(sweep, "compile_kernel", refuse)
    assert all(math.isfinite(rate) for rate in small_prediction("auto"))


def test_auto_falls_back_with_one_notice_when_numba_cannot_run(monkeypatch, capsys):
    """Without a usable numba "auto" says so once on stderr and replays with the Python engine."""
    monkeypatch.setattr(sweep, "compile_kernel", lambda *args, **kwargs: "numba cannot be imported (test)")
    monkeypatch.setattr(sweep, "_NOTICES", set())
    expected = small_prediction("python")
    assert small_prediction("auto") == expected
    assert small_prediction("auto") == expected
    notices = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(notices) == 1 and notices[0].startswith("notice: ") and "numba cannot be imported" in notices[0]


def test_a_kernel_failing_in_a_replay_falls_back_too(monkeypatch, capsys):
    """A compile failure met only in a replay (a pool process) also falls back under "auto"."""
    def fail(*args, **kwargs):
        raise KernelUnavailable("numba could not compile the kernel (test)")

    monkeypatch.setattr(sweep, "compile_kernel", lambda *args, **kwargs: None)
    monkeypatch.setattr(sweep, "simulate_fast", fail)
    monkeypatch.setattr(sweep, "_NOTICES", set())
    assert small_prediction("auto") == small_prediction("python")
    assert capsys.readouterr().err.count("notice: ") == 1


def test_compiled_engine_refuses_what_the_kernel_lacks(monkeypatch):
    """Under "compiled" a setting outside the kernel is a one-line ToolError naming it."""
    lacking(monkeypatch)
    with pytest.raises(ToolError, match="--engine compiled: --sharing fair is not in the compiled kernel yet"):
        small_prediction("compiled")


def test_compiled_engine_refuses_a_machine_without_numba(monkeypatch):
    """Under "compiled" a kernel that cannot run is an error, not a silent fallback."""
    monkeypatch.setattr(sweep, "compile_kernel", lambda *args, **kwargs: "numba cannot be imported (test)")
    with pytest.raises(ToolError, match="--engine compiled: numba cannot be imported"):
        small_prediction("compiled")


@needs_numba
def test_predict_command_takes_the_engine(tmp_path: Path, graph_file: Path, capsys, monkeypatch):
    """`replay predict --engine compiled` runs the default sharing and refuses one the kernel lacks
    in one error line."""
    common = ["predict", str(graph_file), "--workers", "1,2", "--bandwidth", "100mbit", "--steps", "2", "--seeds",
              "1", "--no-timelines", "--engine", "compiled"]
    assert main([*common, "--out", str(tmp_path / "seniority")]) == 0
    capsys.readouterr()
    lacking(monkeypatch)
    code = main([*common, "--sharing", "fair-per-transfer", "--out", str(tmp_path / "per-transfer")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: --engine compiled: --sharing fair-per-transfer"), err
    assert not (tmp_path / "per-transfer").exists()


def test_predict_runs_where_numba_cannot_be_imported(tmp_path: Path):
    """In an interpreter where numba cannot be imported, a fair prediction still runs on the Python
    engine, with one notice line on stderr and no traceback."""
    script = textwrap.dedent(f"""
        import importlib.abc, sys
        class NoNumba(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "numba" or name.startswith("numba."):
                    raise ImportError("numba is not installed here")
                return None
        sys.meta_path.insert(0, NoNumba())
        from replay.cli import main
        sys.exit(main(["predict", {str(CHAIN)!r}, "--workers", "1,2", "--bandwidth", "100mbit", "--sharing", "fair",
                       "--seeds", "1", "--steps", "2", "--jobs", "1", "--no-timelines",
                       "--out", {str(tmp_path / "p")!r}]))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("notice: ") and "numba cannot be imported" in lines[0], lines
    assert (tmp_path / "p" / "prediction.json").is_file()
