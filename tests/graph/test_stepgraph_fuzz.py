"""Damaged step graphs never crash the tools: ``tracetool show`` and ``replay predict`` either
succeed (and write their report) or print exactly one ``error:`` line and return 2.

The property test mutates the committed graphs (fields removed, negated, NaN, infinite, huge, of
the wrong type; nodes added or given duplicate ids; edges to missing nodes or closing cycles; and
valid but extreme edits: zero or day-long durations, empty or huge transfers) and feeds each
mutant to both commands in-process. It is derandomized so CI sees the same examples every run;
set ``STEPGRAPH_FUZZ_EXAMPLES=500 STEPGRAPH_FUZZ_RANDOM=1`` to hunt with fresh random examples.
The plain tests at the end are the crashes the fuzzing found, kept as fixed examples.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import signal
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from replay.cli import main as replay_main
from tests.conftest import TRACES_DIR
from tracetool.cli import main as tracetool_main

BASE_GRAPHS = {name: json.loads((TRACES_DIR / name / "graph.json").read_text()) for name in ("mlp", "inception")}
PREDICT_ARGS = ["--workers", "1,2", "--bandwidth", "100mbit", "--seeds", "1", "--steps", "3", "--warmup", "1"]
PREDICT_ARGS += ["--no-timelines", "--jobs", "1"]
FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("STEPGRAPH_FUZZ_EXAMPLES", "80")),
    deadline=None,
    derandomize="STEPGRAPH_FUZZ_RANDOM" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DAY_US = 86_400e6

Path_ = tuple[str | int, ...]


@dataclass
class Mutant:
    """A mutated step-graph document and the edits that made it (shown when a property fails)."""

    base: str
    document: dict[str, Any]
    edits: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Mutant({self.base}: {'; '.join(self.edits)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis prints falsifying examples with this: the edits, not the whole document."""
        printer.text(repr(self))


# ---- where to edit ----------------------------------------------------------------------------


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every path into the document, containers included; of a sample list only the first entries."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        shown = value if prefix[-1:] in (("nodes",), ("edges",), ("extra_tensors",)) else value[:3]
        for index, child in enumerate(shown):
            yield from _paths(child, (*prefix, index))


PATHS = {name: [p for p in _paths(doc) if p[:1] != ("schema",)] for name, doc in BASE_GRAPHS.items()}


def _parent(document: dict[str, Any], path: Path_) -> Any:
    """The container holding ``path``, or None when earlier edits took it away."""
    holder: Any = document
    for key in path[:-1]:
        try:
            holder = holder[key]
        except (KeyError, IndexError, TypeError):
            return None
    last = path[-1]
    if isinstance(holder, dict) and last in holder:
        return holder
    if isinstance(holder, list) and isinstance(last, int) and last < len(holder):
        return holder
    return None


def _show(path: Path_) -> str:
    return "/".join(str(p) for p in path)


# ---- how to edit ------------------------------------------------------------------------------

ODD_VALUES = (
    st.sampled_from(
        [
            None,
            True,
            False,
            "",
            "abc",
            "12",
            [],
            [1],
            {},
            {"a": 1},
            0,
            -1,
            0.5,
            -0.0,
            2**53 + 1,
            2**64,
            10**400,
            1e300,
            -1e300,
            1e-300,
            math.nan,
            math.inf,
            -math.inf,
        ]
    )
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
)


def _transformed(value: Any, how: str) -> Any:
    """An edit of an existing value: its negation, a huge multiple, a fraction, its text, a list of it."""
    if how == "as text":
        return str(value)
    if how == "in a list":
        return [value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return {"negated": -value - 1, "huge": value * 1e12 + 1e12, "plus a half": value + 0.5}[how]


def remove_field(draw: st.DrawFn, mutant: Mutant) -> None:
    path = draw(st.sampled_from(PATHS[mutant.base]))
    parent = _parent(mutant.document, path)
    if parent is not None:
        del parent[path[-1]]
        mutant.edits.append(f"removed {_show(path)}")


def replace_field(draw: st.DrawFn, mutant: Mutant) -> None:
    path = draw(st.sampled_from(PATHS[mutant.base]))
    value = draw(ODD_VALUES)
    parent = _parent(mutant.document, path)
    if parent is not None:
        parent[path[-1]] = value
        mutant.edits.append(f"{_show(path)} = {value!r:.40}")


def transform_field(draw: st.DrawFn, mutant: Mutant) -> None:
    path = draw(st.sampled_from(PATHS[mutant.base]))
    how = draw(st.sampled_from(["negated", "huge", "plus a half", "as text", "in a list"]))
    parent = _parent(mutant.document, path)
    if parent is not None:
        parent[path[-1]] = _transformed(parent[path[-1]], how)
        mutant.edits.append(f"{_show(path)} {how}")


def _node_index(draw: st.DrawFn, mutant: Mutant) -> int:
    return draw(st.integers(0, len(mutant.document["nodes"]) - 1))


def add_node(draw: st.DrawFn, mutant: Mutant) -> None:
    """A copy of a node appended, perhaps wired from step_start and to step_end."""
    nodes = mutant.document["nodes"]
    copied = copy.deepcopy(nodes[_node_index(draw, mutant)])
    copied["id"] = draw(st.sampled_from([len(nodes), len(nodes) - 1, len(nodes) + 3]))
    nodes.append(copied)
    if draw(st.booleans()):
        end = next(n["id"] for n in nodes if n.get("kind") == "step_end")
        mutant.document["edges"] += [
            {"src": 0, "dst": copied["id"], "kind": "data"},
            {"src": copied["id"], "dst": end, "kind": "control"},
        ]
    mutant.edits.append(f"added a {copied.get('kind')} node {copied['id']}")


def remove_node(draw: st.DrawFn, mutant: Mutant) -> None:
    index = _node_index(draw, mutant)
    del mutant.document["nodes"][index]
    mutant.edits.append(f"removed node #{index}")


def duplicate_id(draw: st.DrawFn, mutant: Mutant) -> None:
    a, b = _node_index(draw, mutant), _node_index(draw, mutant)
    mutant.document["nodes"][a]["id"] = mutant.document["nodes"][b]["id"]
    mutant.edits.append(f"node #{a} given the id of node #{b}")


def add_edge(draw: st.DrawFn, mutant: Mutant) -> None:
    """An edge between two drawn nodes (a cycle, a self-loop, a repeat or a harmless extra), or to nowhere."""
    n = len(mutant.document["nodes"])
    src = draw(st.integers(0, n - 1))
    dst = draw(st.integers(0, n - 1) | st.sampled_from([n, n + 7, -1, 2**63]))
    kind = draw(st.sampled_from(["data", "control", "other"]))
    mutant.document["edges"].append({"src": src, "dst": dst, "kind": kind})
    mutant.edits.append(f"edge {src}->{dst} ({kind})")


def reverse_edge(draw: st.DrawFn, mutant: Mutant) -> None:
    """The reverse of an existing edge: always a cycle."""
    edge = draw(st.sampled_from(mutant.document["edges"]))
    mutant.document["edges"].append({"src": edge["dst"], "dst": edge["src"], "kind": "data"})
    mutant.edits.append(f"reversed edge {edge['src']}->{edge['dst']} added")


def _with_duration(node: dict[str, Any], samples_us: list[float]) -> None:
    mean = sum(samples_us) / len(samples_us)
    std = math.sqrt(sum((s - mean) ** 2 for s in samples_us) / len(samples_us))
    node["duration"] = {"mean_us": mean, "std_us": std, "samples_us": samples_us}


def scale_durations(draw: st.DrawFn, mutant: Mutant) -> None:
    """A valid edit: every duration (samples and mean alike) scaled, from zero to near a day."""
    factor = draw(st.sampled_from([0.0, 1e-9, 0.5, 10.0, 1e4]))
    for node in mutant.document["nodes"]:
        _with_duration(node, [min(DAY_US, s * factor) for s in node["duration"]["samples_us"]])
    mutant.edits.append(f"all durations x {factor:g}")


def extreme_duration(draw: st.DrawFn, mutant: Mutant) -> None:
    """A valid edit: one op's samples set to zero, tiny or almost a day."""
    node = mutant.document["nodes"][_node_index(draw, mutant)]
    value = draw(st.sampled_from([0.0, 1e-6, 1e6, DAY_US]))
    _with_duration(node, [value] * max(1, len(node["duration"]["samples_us"])))
    node["gap_us"] = draw(st.sampled_from([0.0, value]))
    mutant.edits.append(f"node {node['id']} durations {value:g} us")


def resize_transfer(draw: st.DrawFn, mutant: Mutant) -> None:
    """A valid edit: one transfer's bytes changed, with the parameter bytes kept in step."""
    nodes = [n for n in mutant.document["nodes"] if n["kind"] in ("download", "upload")]
    node = draw(st.sampled_from(nodes))
    size = draw(st.sampled_from([0, 1, 2**40, 2**53 // 4]))
    if node["kind"] == "download":
        mutant.document["model"]["parameter_bytes"] += size - node["bytes"]
    node["bytes"] = size
    mutant.edits.append(f"{node['kind']} {node['id']} carries {size} bytes")


def extreme_calibration(draw: st.DrawFn, mutant: Mutant) -> None:
    """A valid edit: a link-calibration figure or a measured step rate at the edge of its range."""
    key = draw(st.sampled_from(["download_bandwidth_bps", "upload_bandwidth_bps", "per_transfer_overhead_s"]))
    value = draw(st.sampled_from([0.0, 1e-300, 1.0, 1e15, 86_400.0]))
    mutant.document["link_calibration"][key] = value
    rate = draw(st.sampled_from([None, 1.0 / 86_400, 1e9]))
    if rate is not None:
        mutant.document["model"].pop("untraced_step_time_s", None)
        mutant.document["model"]["untraced_steps_per_second"] = rate
    mutant.edits.append(f"link_calibration/{key} = {value:g}, steps/s {rate}")


# Edits that keep the document's shape come first, so the field edits after them still find their place.
SHAPE_KEEPING_EDITS: list[Callable[[st.DrawFn, Mutant], None]] = [
    add_node,
    remove_node,
    duplicate_id,
    add_edge,
    reverse_edge,
    scale_durations,
    extreme_duration,
    resize_transfer,
    extreme_calibration,
]
FIELD_EDITS: list[Callable[[st.DrawFn, Mutant], None]] = [remove_field, replace_field, transform_field]


@st.composite
def mutants(draw: st.DrawFn) -> Mutant:
    base = draw(st.sampled_from(sorted(BASE_GRAPHS)))
    mutant = Mutant(base, copy.deepcopy(BASE_GRAPHS[base]))
    for edit in draw(st.lists(st.sampled_from(SHAPE_KEEPING_EDITS), max_size=2)):
        edit(draw, mutant)
    for edit in draw(st.lists(st.sampled_from(FIELD_EDITS), min_size=0 if mutant.edits else 1, max_size=2)):
        edit(draw, mutant)
    return mutant


# ---- the contract -----------------------------------------------------------------------------


def run_cli(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, list[str]]:
    """Run a CLI in-process; its stderr lines, with any warning Python would have printed, and its code."""
    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
    shown = [w for w in caught if not issubclass(w.category, DeprecationWarning | PendingDeprecationWarning)]
    return code, err.getvalue().splitlines() + [f"warning: {w.message}" for w in shown]


def assert_success_or_one_error_line(code: int, stderr_lines: list[str]) -> bool:
    """Code 0, or code 2 with exactly one non-empty ``error:`` line; True on success."""
    assert code in (0, 2), (code, stderr_lines)
    if code == 0:
        return True
    lines = [line for line in stderr_lines if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and lines[0][len("error:") :].strip(), stderr_lines
    return False


@dataclass(frozen=True)
class Outcome:
    show_code: int
    predict_code: int
    errors: list[str]  # the error lines of both commands
    prediction: dict[str, Any] | None


def check_both_commands(document: dict[str, Any], folder: Path) -> Outcome:
    """Feed ``document`` to ``tracetool show`` and ``replay predict``; both must keep the contract."""
    graph = folder / "graph.json"
    graph.write_text(json.dumps(document))
    show_code, show_err = run_cli(tracetool_main, ["show", str(graph)])
    assert_success_or_one_error_line(show_code, show_err)
    out = folder / "out"
    predict_code, predict_err = run_cli(replay_main, ["predict", str(graph), *PREDICT_ARGS, "--out", str(out)])
    prediction = None
    if assert_success_or_one_error_line(predict_code, predict_err):
        prediction = json.loads((out / "prediction.json").read_text())
    errors = [line for line in show_err + predict_err if line.startswith("error:")]
    return Outcome(show_code, predict_code, errors, prediction)


@FUZZ_SETTINGS
@given(mutants())
def test_damaged_graphs_give_a_report_or_one_error_line(mutant: Mutant):
    """Whatever the damage, both commands succeed with their output or refuse it in one error line."""
    with tempfile.TemporaryDirectory() as folder:
        outcome = check_both_commands(mutant.document, Path(folder))
    event(f"show {outcome.show_code}, predict {outcome.predict_code}")


@pytest.mark.parametrize("name", sorted(BASE_GRAPHS))
def test_committed_graph_passes_both_commands(name: str, tmp_path: Path):
    """The unmutated graphs succeed, so the property is not met by refusing everything."""
    outcome = check_both_commands(BASE_GRAPHS[name], tmp_path)
    assert (outcome.show_code, outcome.predict_code) == (0, 0)


# ---- crashes the fuzzing found, as fixed examples -----------------------------------------------


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail, rather than stall CI, if a run hangs (a step of no time once looped forever)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def mlp_with(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    document = copy.deepcopy(BASE_GRAPHS["mlp"])
    edit(document)
    return document


def refused_by_both(document: dict[str, Any], folder: Path, *words: str) -> None:
    outcome = check_both_commands(document, folder)
    assert (outcome.show_code, outcome.predict_code) == (2, 2), outcome
    for line in outcome.errors:
        for word in words:
            assert word in line, (word, line)


def _set_samples(node: dict[str, Any], samples_us: list[float]) -> None:
    node["duration"] = {"mean_us": sum(samples_us) / len(samples_us), "std_us": 0.0, "samples_us": samples_us}


def _without_transfer_bytes(document: dict[str, Any]) -> None:
    for node in document["nodes"]:
        node["bytes"] = 0
    document["model"]["parameter_bytes"] = 0
    document["extra_tensors"] = []
    document["link_calibration"]["per_transfer_overhead_s"] = 0.0


@pytest.mark.parametrize("key", ["model", "source", "link_calibration"])
def test_null_top_level_object(tmp_path: Path, key: str):
    """``"model": null`` (or source, link_calibration) was a TypeError traceback in the reader."""
    refused_by_both(mlp_with(lambda d: d.update({key: None})), tmp_path, f"'{key}'", "not an object")


def test_extra_tensor_without_bytes(tmp_path: Path):
    """An extra tensor without bytes was a KeyError traceback in 'tracetool show'."""
    refused_by_both(mlp_with(lambda d: d["extra_tensors"][0].pop("bytes")), tmp_path, "extra_tensors #0", "'bytes'")


def test_extra_tensor_that_is_a_number(tmp_path: Path):
    """An extra tensor that is a number was a TypeError traceback in 'tracetool show'."""
    refused_by_both(mlp_with(lambda d: d["extra_tensors"].append(93805)), tmp_path, "extra_tensors #1")


def test_step_time_without_mean(tmp_path: Path):
    """An untraced step time without its mean was a KeyError traceback in 'tracetool show'."""
    document = mlp_with(lambda d: d["model"]["untraced_step_time_s"].pop("mean"))
    refused_by_both(document, tmp_path, "'untraced_step_time_s.mean'", "missing")


def test_infinite_duration(tmp_path: Path):
    """An infinite mean duration was 'RuntimeError: replay ended before the measurement window closed'."""
    refused_by_both(mlp_with(lambda d: d["nodes"][70]["duration"].update(mean_us=math.inf)), tmp_path, "node 70")


def test_astronomic_duration_sample(tmp_path: Path):
    """A sample of 4e214 us made later steps vanish in float rounding: a ZeroDivisionError in the engine."""
    document = mlp_with(lambda d: d["nodes"][56]["duration"]["samples_us"].__setitem__(2, 4.08e214))
    refused_by_both(document, tmp_path, "node 56", "'duration.samples_us[2]'", "a day")


def test_nan_duration(tmp_path: Path):
    """A NaN mean duration was a traceback; it is one line naming the node and field."""
    refused_by_both(mlp_with(lambda d: d["nodes"][9]["duration"].update(mean_us=math.nan)), tmp_path, "NaN")


def test_ops_of_no_time_are_not_calibrated(tmp_path: Path):
    """With every op at 0 us, calibration doubled its scale to infinity (NaN warnings, then a
    RuntimeError); now the scale stays 1 and the step is the transfers alone."""

    def edit(document: dict[str, Any]) -> None:
        for node in document["nodes"]:
            _set_samples(node, [0.0] * len(node["duration"]["samples_us"]))
            node["gap_us"] = 0.0

    with deadline(60):
        outcome = check_both_commands(mlp_with(edit), tmp_path)
    assert (outcome.show_code, outcome.predict_code) == (0, 0)
    assert outcome.prediction is not None
    assert outcome.prediction["calibration"]["compute_scale"] == 1.0
    assert "no time" in outcome.prediction["calibration"]["note"]


def test_transfers_of_no_bytes_are_calibrated(tmp_path: Path):
    """With no transfer bytes and no per-transfer overhead, calibration's replay with ops scaled to
    zero was a step of no time, and the engine looped forever; the floor is now 0 without a replay."""
    with deadline(60):
        outcome = check_both_commands(mlp_with(_without_transfer_bytes), tmp_path)
    assert (outcome.show_code, outcome.predict_code) == (0, 0)
    assert outcome.prediction is not None
    assert outcome.prediction["calibration"]["calibrated_step_time_s"] == pytest.approx(
        BASE_GRAPHS["mlp"]["model"]["untraced_step_time_s"]["mean"], rel=1e-5
    )


def test_step_of_no_time_is_refused(tmp_path: Path):
    """A graph where nothing takes time (all samples 0 us, no bytes) made the engine loop forever;
    'replay predict' now refuses it in one line, while 'tracetool show' still shows it."""

    def edit(document: dict[str, Any]) -> None:
        _without_transfer_bytes(document)
        for node in document["nodes"]:
            _set_samples(node, [0.0] * len(node["duration"]["samples_us"]))
            node["gap_us"] = 0.0

    with deadline(60):
        outcome = check_both_commands(mlp_with(edit), tmp_path)
    assert (outcome.show_code, outcome.predict_code) == (0, 2)
    assert "sure to take time" in outcome.errors[0]


def test_link_calibrated_at_a_trickle(tmp_path: Path):
    """A calibrated bandwidth of 1e-300 bit/s overflowed the replay's clock; it is refused on read."""
    document = mlp_with(lambda d: d["link_calibration"].update(download_bandwidth_bps=1e-300))
    refused_by_both(document, tmp_path, "'download_bandwidth_bps'", "not calibrated")


def test_integer_too_big_for_a_float(tmp_path: Path):
    """A 401-digit integer as a calibration figure was an OverflowError traceback (float() of it)."""
    document = mlp_with(lambda d: d["link_calibration"].update(per_transfer_overhead_s=10**400))
    refused_by_both(document, tmp_path, "'per_transfer_overhead_s'", "above 86400 s (a day)")
