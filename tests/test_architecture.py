"""The layout keeps its promises (docs/architecture.md): no import loops, packages import only
what their row allows, and ``replay`` and ``tracetool.graph`` run without TensorFlow."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import networkx as nx
import pytest

from tests.conftest import REPO_ROOT, TRACES_DIR

TF2_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "tf2"

PACKAGES = ("tracetool", "replay", "models")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((REPO_ROOT / package).rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules imported anywhere in the file (function-level imports count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            # "from pkg import mod" names a module; "from mod import func" names the module itself
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for target in _imports(path, modules):
            if target != name:
                graph.add_edge(name, target)
    return graph


def test_no_two_modules_import_each_other_in_a_loop():
    """The project's import graph, counting imports inside functions, has no cycle."""
    graph = import_graph()
    cycles = list(nx.simple_cycles(graph))
    assert cycles == [], f"import loops: {cycles[:5]}"


# package -> prefixes it must not import (docs/architecture.md, "Packages")
FORBIDDEN = {
    "tracetool.graph": ("tracetool.collect", "tracetool.cluster", "tracetool.measure", "replay"),
    "tracetool.cluster": ("tracetool.collect", "tracetool.graph", "tracetool.measure", "replay"),
    "tracetool.collect": ("tracetool.measure", "replay"),
    "replay.engine": ("replay.sweep", "replay.report", "replay.run", "replay.cli", "replay.timeline",
                      "replay.calibration"),
    "models": ("tracetool", "replay"),
    "replay.sync": ("replay.engine", "replay.sweep", "replay.report", "replay.run", "replay.cli"),
    "replay.analytic": ("replay.cluster", "replay.cli", "replay.compare", "replay.timeline"),
    "replay.cluster": ("replay.engine.loop", "replay.sync", "replay.cli", "replay.compare", "replay.timeline"),
}
REPLAY_MAY_USE = ("tracetool.errors", "tracetool.outputs", "tracetool.atomic_files", "tracetool.cli_support",
                  "tracetool.liveness", "tracetool.progress", "tracetool.graph.stepgraph",
                  "tracetool.graph.json_fields",
                  "tracetool.graph.builder")  # replay analytic reads a profile folder as tracetool graph does


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_import_only_what_they_may(package: str):
    """Each package keeps to its row of the architecture table."""
    graph = import_graph()
    wrong = sorted((src, dst) for src, dst in graph.edges
                   if _within(src, package) and any(_within(dst, p) for p in FORBIDDEN[package]))
    assert wrong == []


def test_replay_uses_only_the_contract_of_tracetool():
    """replay imports from tracetool only the step-graph contract and the shared file and error helpers."""
    graph = import_graph()
    wrong = sorted((src, dst) for src, dst in graph.edges
                   if _within(src, "replay") and _within(dst, "tracetool") and dst not in REPLAY_MAY_USE)
    assert wrong == []


# An import hook that makes this interpreter one without TensorFlow, for scripts run in a subprocess
NO_TENSORFLOW = (
    "import importlib.abc, sys\n"
    "class NoTensorFlow(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'tensorflow' or name.startswith('tensorflow.'):\n"
    "            raise ImportError('TensorFlow is not installed here')\n"
    "        return None\n"
    "sys.meta_path.insert(0, NoTensorFlow())"
)


def test_replay_and_the_graph_package_run_without_tensorflow(tmp_path: Path):
    """In an interpreter where TensorFlow cannot be imported, every replay and tracetool.graph module imports,
    and a prediction runs from a committed step graph."""
    modules = [m for m in _modules() if _within(m, "replay") or _within(m, "tracetool.graph")]
    script = NO_TENSORFLOW + textwrap.dedent(f"""
        import importlib
        for name in {modules!r}:
            importlib.import_module(name)
        from replay.cli import main
        code = main(["predict", {str(TRACES_DIR / "mlp" / "graph.json")!r}, "--workers", "1,2", "--bandwidth",
                     "100mbit", "--seeds", "1", "--steps", "4", "--out", {str(tmp_path / "p")!r}])
        assert "tensorflow" not in sys.modules
        sys.exit(code)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "p" / "prediction.json").is_file()


def test_the_collector_says_in_one_line_what_to_install_when_tensorflow_is_missing(tmp_path: Path):
    """Without TensorFlow, profile refuses before starting anything and graph refuses a RunMetadata
    protobuf, each with the package to install; a Chrome timeline and a TF2 capture with a
    variables file still build graphs (the XPlane schema is the tool's own)."""
    script = NO_TENSORFLOW + textwrap.dedent(f"""
        from tracetool.cli import main
        codes = [main(["profile", "--model", "mlp", "--out", {str(tmp_path / "prof")!r}]),
                 main(["graph", {str(TRACES_DIR / "mlp" / "step-000.runmeta.pb")!r}, "--out",
                       {str(tmp_path / "g.json")!r}]),
                 main(["graph", {str(TRACES_DIR / "mlp" / "step-000.timeline.json")!r}, "--out",
                       {str(tmp_path / "t.json")!r}]),
                 main(["graph", {str(TF2_FIXTURES / "keras_mlp_loop.xplane.pb")!r}, "--variables",
                       {str(TF2_FIXTURES / "keras_mlp_loop.variables.json")!r}, "--out", {str(tmp_path / "x.json")!r}])]
        assert "tensorflow" not in sys.modules
        print(codes)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=300)
    assert result.stdout.strip().splitlines()[-1] == "[2, 2, 0, 0]", result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2 and all("tfsim[collector]" in line for line in errors)
    assert not (tmp_path / "prof").exists() and not (tmp_path / "g.json").exists()
    assert (tmp_path / "t.json").is_file() and (tmp_path / "x.json").is_file()
