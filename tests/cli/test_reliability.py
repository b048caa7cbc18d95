"""Bad input is refused in one line before any work, and nothing that existed before is changed.

Each test runs a real command line in a subprocess and requires exit code 2, exactly one line
on stderr starting with ``error:``, no traceback, and every file and folder that existed
before byte-for-byte as it was (``snapshot``).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, TRACES_DIR, needs_root
from tracetool.cluster import netns
from tracetool.outputs import MARKER_FILE

MLP_GRAPH = TRACES_DIR / "mlp" / "graph.json"


def run_cli(tool: str, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    module = {"tracetool": "tracetool.cli", "replay": "replay.cli"}[tool]
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=cwd or REPO_ROOT, timeout=timeout)


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit code 2, one line starting with 'error:', no traceback; returns the line."""
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry below ``root`` with its bytes (files) or its kind (folders, links, devices)."""
    found: dict[str, bytes | str] = {}
    for path in sorted([root, *root.rglob("*")]):
        mode = path.lstat().st_mode
        key = str(path.relative_to(root))
        if stat.S_ISREG(mode):
            found[key] = path.read_bytes()
        elif stat.S_ISLNK(mode):
            found[key] = f"link to {os.readlink(path)}"
        else:
            found[key] = f"mode {stat.S_IFMT(mode):o}"
    return found


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """A folder of the user's own: a file and a subfolder the tool did not write."""
    folder = tmp_path / "mine"
    (folder / "notes").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\section{Results}\n")
    (folder / "notes" / "todo.txt").write_bytes(b"\x00\x01 binary too")
    return folder


# ---------------------------------------------------------------- 1. outputs that are not regular files

def test_graph_never_replaces_a_device(tmp_path: Path):
    """`graph --out /dev/null` is refused and /dev/null stays a character device."""
    before = os.stat("/dev/null")
    assert_refused(run_cli("tracetool", "graph", str(TRACES_DIR / "mlp"), "--out", "/dev/null"), "/dev/null", "device")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_graph_refuses_outputs_that_are_not_regular_files(tmp_path: Path, kind: str):
    """A named pipe, a symbolic link or a folder given as the output file stays as it was."""
    target = tmp_path / "out.json"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "real.json").write_text("keep")
        target.symlink_to(tmp_path / "real.json")
    else:
        target.mkdir()
        (target / "inside.txt").write_text("keep")
    before = snapshot(tmp_path)
    assert_refused(run_cli("tracetool", "graph", str(TRACES_DIR / "mlp"), "--out", str(target)), str(target))
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- 2. folders the tool did not write

def test_profile_refuses_a_folder_it_did_not_write(user_folder: Path):
    """`profile --out` a user's folder is refused before any process starts; the folder is unchanged."""
    before = snapshot(user_folder)
    started = time.monotonic()
    assert_refused(run_cli("tracetool", "profile", "--model", "mlp", "--out", str(user_folder)), "did not write")
    assert time.monotonic() - started < 20
    assert snapshot(user_folder) == before


def test_profile_refuses_the_current_folder(user_folder: Path):
    """`profile --out .` in a folder of the user's is refused and empties nothing."""
    before = snapshot(user_folder)
    assert_refused(run_cli("tracetool", "profile", "--model", "mlp", "--out", ".", cwd=user_folder), "did not write")
    assert snapshot(user_folder) == before


@pytest.mark.parametrize("command", ["predict", "measure", "validate"])
def test_folder_outputs_refuse_a_users_folder(user_folder: Path, command: str):
    """predict, measure and validate refuse a folder with the user's files in it, before any work."""
    before = snapshot(user_folder)
    if command == "predict":
        result = run_cli("replay", "predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--out", str(user_folder))
    else:
        result = run_cli("tracetool", command, "--model", "mlp", "--workers", "1", "--bandwidth", "100mbit",
                         "--out", str(user_folder))
    assert_refused(result, "did not write")
    assert snapshot(user_folder) == before


def test_a_file_added_to_a_tool_folder_protects_it(tmp_path: Path):
    """A folder the tool wrote, once the user adds a file of their own, is no longer replaced."""
    out = tmp_path / "pred"
    args = ("predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--workers", "1", "--seeds", "1", "--steps", "4",
            "--no-timelines", "--out", str(out))
    assert run_cli("replay", *args).returncode == 0
    (out / "my-analysis.ipynb").write_text("{}")
    before = snapshot(out)
    assert_refused(run_cli("replay", *args), "my-analysis.ipynb")
    assert snapshot(out) == before


# ---------------------------------------------------------------- 3. what the machine cannot hold

@needs_root
@pytest.mark.parametrize("args", [
    ("profile", "--model", "mlp", "--workers", "100000"),
    ("measure", "--model", "mlp", "--workers", "100000", "--bandwidth", "100mbit"),
    ("measure", "--model", "mlp", "--workers", "1-100000000000", "--bandwidth", "100mbit"),
    ("validate", "--model", "mlp", "--workers", "1,100000", "--bandwidth", "100mbit"),
])
def test_clusters_this_machine_cannot_hold_are_refused_before_starting(tmp_path: Path, args: tuple[str, ...]):
    """Worker counts past the machine's limit are refused at once, naming the limit; nothing is created."""
    namespaces_before = set(netns.list_namespaces())
    started = time.monotonic()
    line = assert_refused(run_cli("tracetool", *args, "--out", str(tmp_path / "out")), "at most")
    assert time.monotonic() - started < 20
    assert "workers besides the PS" in line and "GiB" in line
    assert set(netns.list_namespaces()) == namespaces_before
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 6. outputs that cannot be written

@pytest.mark.parametrize("args", [
    ("tracetool", "graph", str(TRACES_DIR / "mlp"), "--out", "/proc/tfsim-nowhere/g.json"),
    ("replay", "predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--out", "/proc/tfsim-nowhere"),
    ("tracetool", "profile", "--model", "mlp", "--out", "/proc/tfsim-nowhere"),
    ("tracetool", "measure", "--model", "mlp", "--workers", "1", "--bandwidth", "100mbit", "--out",
     "/proc/tfsim-nowhere"),
    ("tracetool", "validate", "--model", "mlp", "--workers", "1", "--bandwidth", "100mbit", "--out",
     "/proc/tfsim-nowhere"),
])
def test_unwritable_outputs_are_refused_before_any_work(args: tuple[str, ...]):
    """An output under /proc is refused at once (a measurement does not run first)."""
    started = time.monotonic()
    assert_refused(run_cli(*args), "cannot write")
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("command", ["predict", "profile", "measure", "validate"])
def test_a_file_where_a_folder_is_expected_is_refused(tmp_path: Path, command: str):
    """An existing file given where a folder goes is refused and left as it was."""
    target = tmp_path / "results"
    target.write_text("precious")
    if command == "predict":
        result = run_cli("replay", "predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--out", str(target))
    elif command == "profile":
        result = run_cli("tracetool", "profile", "--model", "mlp", "--out", str(target))
    else:
        result = run_cli("tracetool", command, "--model", "mlp", "--workers", "1", "--bandwidth", "100mbit",
                         "--out", str(target))
    assert_refused(result, "not a folder")
    assert target.read_text() == "precious"


# ---------------------------------------------------------------- 9. inputs of the wrong kind

def test_binary_measurements_are_refused(tmp_path: Path):
    """A binary file given as --from-measured or --cluster is named in one line."""
    binary = tmp_path / "measured.json"
    binary.write_bytes(bytes(range(256)) * 4)
    line = assert_refused(run_cli("tracetool", "validate", "--model", "mlp", "--from-profile", str(TRACES_DIR / "mlp"),
                                  "--from-measured", str(binary), "--out", str(tmp_path / "v")), "not JSON")
    assert str(binary) in line
    assert_refused(run_cli("tracetool", "measure", "--model", "mlp", "--cluster", str(binary), "--job", "worker",
                           "--out", str(tmp_path / "m")), "not JSON")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.json"]


def test_negative_seed_is_refused(tmp_path: Path):
    """--seed -1 is one line, not a NumPy traceback."""
    assert_refused(run_cli("replay", "predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--seed", "-1",
                           "--out", str(tmp_path / "p")), "--seed")
    assert not (tmp_path / "p").exists()


# ---------------------------------------------------------------- 10. every argument before any write

def test_validate_checks_its_arguments_before_writing(tmp_path: Path):
    """`validate --order bogus` into an earlier validation folder changes nothing in it."""
    out = tmp_path / "v"
    assert run_cli("replay", "predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--workers", "1", "--seeds", "1",
                   "--steps", "4", "--no-timelines", "--out", str(out)).returncode == 0
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps({
        "schema": "tfsim.measured", "schema_version": 1, "model": "mlp", "batch_size": 32, "bandwidth_bps": 1e8,
        "points": [{"workers": 1, "steps_per_second": 1.0, "steps_per_second_ci95": 0.1}],
    }))
    before = snapshot(tmp_path)
    assert_refused(run_cli("tracetool", "validate", "--model", "mlp", "--from-profile", str(TRACES_DIR / "mlp"),
                           "--from-measured", str(measured), "--order", "bogus", "--out", str(out)), "bogus")
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- 11. one run's outputs per folder

def test_predict_folder_holds_one_runs_outputs(tmp_path: Path):
    """Predicting 1,2 into the folder of a 1,2,4 prediction leaves no timeline-4.json behind."""
    out = tmp_path / "p"
    common = ("predict", str(MLP_GRAPH), "--bandwidth", "100mbit", "--seeds", "1", "--steps", "4", "--out", str(out))
    assert run_cli("replay", *common, "--workers", "1,2,4").returncode == 0
    assert (out / "timeline-4.json").is_file()
    assert run_cli("replay", *common, "--workers", "1,2").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MARKER_FILE, "prediction.json", "throughput.png", "timeline-1.json", "timeline-2.json"])
    assert [p["workers"] for p in json.loads((out / "prediction.json").read_text())["points"]] == [1, 2]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_graph_into_a_profile_folder_keeps_it_replaceable(tmp_path: Path):
    """A graph written into a profile folder is listed as the tool's, so a new profile may replace the folder."""
    profile = tmp_path / "mlp"
    shutil.copytree(TRACES_DIR / "mlp", profile)
    (profile / "graph.json").unlink()
    assert run_cli("tracetool", "graph", str(profile), "--out", str(profile / "graph.json")).returncode == 0
    assert "graph.json" in json.loads((profile / MARKER_FILE).read_text())["files"]
    from tracetool.outputs import check_output_folder

    check_output_folder(profile)  # no ToolError: every file in it is the tool's


# ---------------------------------------------------------------- 13. one line for argument errors

@pytest.mark.parametrize("args", [
    ("tracetool", "profile"),
    ("tracetool", "nosuchcommand"),
    ("tracetool", "profile", "--model", "mlp", "--batch-size", "many", "--out", "x"),
    ("replay", "predict", str(MLP_GRAPH)),
    ("replay", "predict", str(MLP_GRAPH), "--bandwidth", "1gbit", "--sharing", "psychic", "--out", "x"),
    ("replay",),
])
def test_argument_errors_are_one_line(tmp_path: Path, args: tuple[str, ...]):
    """argparse's complaints come as one line that points to --help, not a usage block."""
    assert_refused(run_cli(*args, cwd=tmp_path), "--help")
    assert list(tmp_path.iterdir()) == []


def test_model_file_syntax_error_is_found_before_the_cluster_starts(tmp_path: Path):
    """A model file that does not compile is refused at once with its line number."""
    model = tmp_path / "net.py"
    model.write_text("def build(batch_size):\n    return (batch_size\n")
    started = time.monotonic()
    assert_refused(run_cli("tracetool", "profile", "--model", str(model), "--out", str(tmp_path / "p")),
                   "syntax error", "line 2")
    assert time.monotonic() - started < 5
    assert not (tmp_path / "p").exists()


# ---------------------------------------------------------------- 14. formats of other profilers

def test_tf2_xplane_without_variables_asks_for_them(tmp_path: Path):
    """A TF2 capture sizes no transfer: without the model's variables it is named, with what to add."""
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(b"\x0a\x05/host")
    assert_refused(run_cli("tracetool", "graph", str(path), "--out", str(tmp_path / "g.json")),
                   "XPlane", "--variables", "--model")


@pytest.mark.parametrize("name,content,words", [
    ("host.xplane.pb", b"\x0a\x09\x12\x07/ho", ("not an XSpace", "damaged")),
    ("host.xplane.pb", b"", ("empty",)),
    ("host.trace.json.gz", b"\x1f\x8b", ("damaged gzip",)),
])
def test_damaged_tf2_captures_are_named(tmp_path: Path, name: str, content: bytes, words: tuple[str, ...]):
    path = tmp_path / name
    path.write_bytes(content)
    variables = tmp_path / "variables.json"
    variables.write_text('[{"name": "dense/kernel", "bytes": 4}]')
    assert_refused(run_cli("tracetool", "graph", str(path), "--variables", str(variables),
                           "--out", str(tmp_path / "g.json")), *words)
    assert not (tmp_path / "g.json").exists()


def test_tf2_trace_viewer_content_is_recognized(tmp_path: Path):
    """A TF2 trace-viewer JSON under another name is recognized by its '/host:CPU' processes."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 1, "name": "MatMul", "ts": 1, "dur": 2},
    ]}))
    assert_refused(run_cli("tracetool", "graph", str(path), "--out", str(tmp_path / "g.json")), "TF2 profiler",
                   "--variables")


def test_unknown_model_argument_is_refused_before_the_cluster_starts(tmp_path: Path):
    """--model-arg names that build() does not take are refused from the source, naming the ones it takes."""
    started = time.monotonic()
    assert_refused(run_cli("tracetool", "profile", "--model", "mlp", "--model-arg", "layers=3",
                           "--out", str(tmp_path / "p")), "layers", "width")
    assert time.monotonic() - started < 5
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,words", [
    (("profile", "--model", "mlp", "--batch-size", "100000000000"), ("--batch-size", "65536")),
    (("profile", "--model", "mlp", "--steps", "1000000"), ("--steps", "1000")),
    (("measure", "--model", "mlp", "--workers", "1", "--duration", "1e9"), ("--duration", "3600")),
    (("measure", "--model", "mlp", "--workers", "1", "--settle", "1e9"), ("--settle", "between 2 and 3600")),
    (("validate", "--model", "mlp", "--workers", "1", "--bandwidth", "20mbit", "--settle", "0.5"),
     ("--settle must be between 2 and 3600 seconds, got 0.5",)),
    (("show", str(MLP_GRAPH), "--top", "-1"), ("--top",)),
])
def test_unbounded_parameters_are_refused(tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]):
    """Sizes and times that would never finish, or fail deep inside TensorFlow, are refused at once."""
    out = ("--out", str(tmp_path / "o")) if args[0] != "show" else ()
    assert_refused(run_cli("tracetool", *args, *out), *words)
    assert list(tmp_path.iterdir()) == []


def test_reused_link_probe_is_checked_before_measuring(tmp_path: Path):
    """A --from-link-probe that is not a link probe is refused before any cluster runs."""
    probe = tmp_path / "link-probe.json"
    probe.write_bytes(b"\x89PNG\r\n")
    started = time.monotonic()
    assert_refused(run_cli("tracetool", "validate", "--model", "mlp", "--workers", "1,2", "--bandwidth", "100mbit",
                           "--contention-efficiency", "probe", "--from-link-probe", str(probe),
                           "--out", str(tmp_path / "v")), "link-probe")
    assert time.monotonic() - started < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link-probe.json"]


def test_progress_in_a_log_is_a_line_per_phase():
    """Off a terminal, progress is one line per phase with the time the last one took, never a redrawn bar."""
    import io

    from tracetool.progress import StepProgress

    log = io.StringIO()
    with StepProgress(total=30, label="profile mlp", stream=log) as progress:
        for done in range(1, 31):
            progress.update(done, "warmup" if done <= 5 else "untraced" if done <= 25 else "traced")
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert [ln.split(":")[1].split(",")[0].strip() for ln in lines[:3]] == ["warmup", "untraced", "traced"]
    assert len(lines) == 4 and "30 steps done" in lines[-1]


def test_a_folder_that_gains_foreign_files_during_a_run_is_kept(tmp_path: Path):
    """If the user adds a file to the output folder while a run works, the swap is refused: their folder
    stays as it is and the finished outputs are kept beside it, named in the error."""
    from tracetool.errors import ToolError
    from tracetool.outputs import output_folder

    target = tmp_path / "out"
    with pytest.raises(ToolError, match="gained files") as refusal:
        with output_folder(target, "replay predict") as staging:
            (staging / "prediction.json").write_text("{}")
            target.mkdir()
            (target / "mine.txt").write_text("keep")
    assert snapshot(target) == {".": "mode 40000", "mine.txt": b"keep"}
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(".out.tfsim-partial-")]
    assert len(kept) == 1 and str(kept[0]) in str(refusal.value)
    assert (kept[0] / "prediction.json").read_text() == "{}"


@pytest.mark.skipif(bool(glob.glob("/dev/nvidia[0-9]*")), reason="this machine has a GPU")
def test_profile_on_a_gpu_is_refused_where_tensorflow_sees_none(tmp_path: Path):
    """--device gpu asks TensorFlow for its GPUs before any server starts, and says why there are none."""
    result = run_cli("tracetool", "profile", "--model", "mlp", "--device", "gpu", "--out", str(tmp_path / "p"))
    assert_refused(result, "--device gpu", "GPU", "--device cpu")
    assert not (tmp_path / "p").exists()
    assert_refused(run_cli("tracetool", "profile", "--model", "mlp", "--device", "tpu", "--out", str(tmp_path / "p")),
                   "--device", "cpu", "gpu")


@pytest.mark.parametrize("argv,words", [
    (["--bandwidth", "100mbit", "--queue", "100"], ("bad queue '100'", "5ms")),
    (["--bandwidth", "100mbit", "--queue", "5000ms"], ("1 to 2000 ms",)),
    (["--queue", "100ms"], ("--queue", "--bandwidth")),
])
def test_bad_queue_is_refused_before_anything_starts(tmp_path: Path, argv: list[str], words: tuple[str, ...]):
    result = run_cli("tracetool", "measure", "--model", "mlp", "--workers", "1", *argv, "--out", str(tmp_path / "m"))
    assert_refused(result, *words)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("command,argv,words", [
    ("measure", ["--max-standard-error", "some"], ("bad --max-standard-error 'some'", "4%")),
    ("measure", ["--max-standard-error", "150%"], ("--max-standard-error must be a percentage",)),
    ("measure", ["--max-repeats", "6"], ("--max-repeats caps", "--max-standard-error")),
    ("measure", ["--repeats", "3", "--max-standard-error", "4%", "--max-repeats", "2"],
     ("--max-repeats must be between --repeats (3) and 30, got 2",)),
    ("validate", ["--max-repeats", "31"], ("--max-repeats must be between --repeats (2) and 30, got 31",)),
    ("validate", ["--max-standard-error", "0", "--max-repeats", "4"], ("--max-repeats caps",)),
    ("measure", ["--cluster", "c.json", "--job", "worker", "--max-standard-error", "4%"], ("local clusters only",)),
])
def test_bad_run_limits_are_refused_before_anything_starts(tmp_path: Path, command: str, argv: list[str],
                                                           words: tuple[str, ...]):
    result = run_cli("tracetool", command, "--model", "mlp", "--workers", "1", *argv, "--out", str(tmp_path / "m"))
    assert_refused(result, *words)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("argv,words", [
    ([], ("--bandwidth is required",)),
    (["--bandwidth", "fast"], ("bad bandwidth",)),
    (["--bandwidth", "100mbit", "--queue", "deep"], ("bad queue",)),
    (["--bandwidth", "100mbit", "--trials", "-1"], ("--trials must be between 0 and 100, got -1",)),
    (["--bandwidth", "100mbit", "--trials", "0", "--no-step-fit"], ("--trials 0 with --no-step-fit",)),
    (["--bandwidth", "100mbit", "--step-repeats", "0"], ("--step-repeats must be between 1 and 10, got 0",)),
    (["--bandwidth", "100mbit", "--reference-steps", "0.25,0.25"], ("--reference-steps '0.25,0.25'", "different")),
    (["--bandwidth", "100mbit", "--reference-steps", "fast"], ("--reference-steps 'fast'",)),
    (["--bandwidth", "100mbit", "--reference-steps", "0.25,20"], ("between 0.01 and 10 seconds",)),
    (["--bandwidth", "100mbit", "--tcp-congestion-control", "no-such-cc"], ("no-such-cc",)),
    (["--bandwidth", "100mbit", "--step-window", "1"], ("--step-window must be between 2 and 600 seconds, got 1",)),
    (["--bandwidth", "100mbit", "--step-window", "1e6"], ("--step-window must be between",)),
    (["--bandwidth", "100mbit", "--transport", "udp"], ("--transport", "tcp", "grpc")),
    (["--cluster", "c.json"], ("--job",)),
    (["--cluster", "c.json", "--job", "worker", "--bandwidth", "100mbit"], ("real hosts are probed as they are",)),
    (["--cluster", "missing.json", "--job", "worker"], ("missing.json",)),
])
def test_bad_probe_arguments_are_refused_before_anything_starts(tmp_path: Path, argv: list[str],
                                                                words: tuple[str, ...]):
    result = run_cli("tracetool", "probe", *argv, "--out", str(tmp_path / "link.json"))
    assert_refused(result, *words)
    assert not (tmp_path / "link.json").exists()


def test_replay_predict_needs_a_bandwidth_or_a_link_profile(tmp_path: Path):
    graph = Path(__file__).resolve().parents[2] / "traces" / "mlp" / "graph.json"
    assert_refused(run_cli("replay", "predict", str(graph), "--workers", "1", "--out", str(tmp_path / "p")),
                   "--bandwidth", "--link-profile")
    assert_refused(run_cli("replay", "predict", str(graph), "--workers", "1", "--link-profile",
                           str(tmp_path / "none.json"), "--out", str(tmp_path / "p")),
                   "does not exist", "tracetool probe")
