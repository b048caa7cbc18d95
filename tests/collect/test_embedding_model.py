"""The embedding model (widedeep): its tables stay on the PS, a step moves only the rows its batch looks
up, and the profile, the step graph and the replay carry those rows, not the tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay import predict
from replay.engine.link import LinkConfig
from tests.conftest import REPO_ROOT, needs_root
from tracetool.graph.builder import build_stepgraph_from_path
from tracetool.graph.stepgraph import DOWNLOAD, UPLOAD

BATCH, FIELDS, DIM, ROWS = 16, 8, 32, 100_000


@pytest.fixture(scope="module")
def widedeep_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("widedeep") / "prof"
    result = subprocess.run(
        [sys.executable, "-m", "tracetool.cli", "profile", "--model", "widedeep", "--batch-size", str(BATCH),
         "--steps", "2", "--warmup", "2", "--untraced-steps", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.cluster
@needs_root
def test_the_profile_names_the_tables_read_by_rows_and_leaves_them_out_of_the_parameter_bytes(widedeep_profile: Path):
    meta = json.loads((widedeep_profile / "meta.json").read_text())
    tables = {t["name"]: t for t in meta["embedding_tables"]}
    assert tables["deep/embedding"] == {"name": "deep/embedding", "rows": ROWS, "bytes": ROWS * DIM * 4}
    assert tables["wide/weights"]["rows"] == ROWS
    # the dense part: 269 inputs -> 256 -> 128 -> 1, with biases
    dense = (FIELDS * DIM + 13) * 256 + 256 + 256 * 128 + 128 + 128 + 1
    assert meta["parameter_bytes"] == 4 * dense


@pytest.mark.cluster
@needs_root
def test_a_step_downloads_the_rows_its_batch_looks_up_and_uploads_their_gradients(widedeep_profile: Path):
    graph = build_stepgraph_from_path(widedeep_profile)
    rows = [e for e in graph.extra_tensors if e["kind"] == "rows"]
    # every lookup of the batch: a 32-float row of the deep table and a 1-float row of the wide one
    assert sorted(e["bytes"] for e in rows) == [BATCH * FIELDS * 4, BATCH * FIELDS * DIM * 4]
    assert graph.bytes_of_kind(DOWNLOAD) == graph.model["parameter_bytes"] + sum(e["bytes"] for e in rows)
    assert graph.bytes_of_kind(DOWNLOAD) < graph.model["embedding_tables"][0]["bytes"] / 10
    gradients = {n.tensor: n.bytes for n in graph.nodes if n.kind == UPLOAD and n.tensor.startswith("gradients")}
    assert BATCH * FIELDS * DIM * 4 in gradients.values()  # the deep rows' gradients (IndexedSlices values)
    assert BATCH * FIELDS * 8 in gradients.values()  # their int64 ids (IndexedSlices indices)
    ids = [e for e in graph.extra_tensors if e["direction"] == "upload" and e["tensor"] == "ids"]
    assert ids and ids[0]["bytes"] == BATCH * FIELDS * 8  # the lookup runs on the PS: the ids go up


@pytest.mark.cluster
@needs_root
def test_the_replay_moves_the_rows_not_the_tables(widedeep_profile: Path):
    """At 10 Mbit/s the link bounds the steps by the bytes a step moves: rows, not 13 MB of tables."""
    graph = build_stepgraph_from_path(widedeep_profile)
    link = LinkConfig(download_bandwidth_bps=1e7, upload_bandwidth_bps=1e7)
    prediction = predict(graph, [1, 8], link)
    step_bits = 8 * max(graph.bytes_of_kind(DOWNLOAD), graph.bytes_of_kind(UPLOAD))
    assert prediction.link_bound_steps_per_second == pytest.approx(1e7 / step_bits, rel=1e-6)
    eight = prediction.points[1].steps_per_second
    assert 0.8 * prediction.link_bound_steps_per_second < eight <= prediction.link_bound_steps_per_second * 1.001
