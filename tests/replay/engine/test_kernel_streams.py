"""The compiled kernel replays ``--max-streams`` under ``fair`` and ``seniority`` sharing
(replay.engine.kernel.waiting: transfers beyond the cap wait in the order policy's order and are
admitted at the end of the instant a stream frees) as the reference engine does, and
predictions with a stream cap run on it."""

from __future__ import annotations

import pytest

from replay.engine.kernel import unsupported_setting
from replay.engine.order import PriorityOrder, RandomOrder
from replay.engine.sharing import FairSharing, SenioritySharing
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, needs_numba
from tests.replay.engine.test_kernel_directions import run_both, shaped_link
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
DISCIPLINES = ["async", "sync", "static:0.8", "saps:1"]
# One stream at a time, a few, and a cap no step reaches (every transfer still waits for the end
# of its instant to be admitted).
CAPS = [1, 3, 10_000]


def capped(sharing: str, cap: int) -> tuple[FairSharing, str]:
    """The sharing model under test with ``cap`` streams, and the interfaces it is run with."""
    if sharing == "fair":
        return FairSharing(max_streams=cap), "equal"
    if sharing == "fair-unequal":  # the reference's seniority link of weight 1
        return FairSharing(max_streams=cap), "both"
    if sharing == "fair-unequal-one-way":
        return FairSharing(max_streams=cap), "uploads-only"
    if sharing == "seniority":
        return SenioritySharing(seniority=2.0, overtake=0.4, overtake_time_s=0.04, max_streams=cap), "equal"
    if sharing == "seniority-always-overtaking":
        return SenioritySharing(seniority=1.5, overtake=1.0, max_streams=cap), "downloads-only"
    if sharing == "groups":
        return SenioritySharing(join_window_s=0.5, leader_weight=1.5, max_streams=cap), "equal"
    assert sharing == "fair-downloads"
    return SenioritySharing(overtake=0.4, overtake_time_s=0.04, fair_downloads=True, max_streams=cap), "both"


SHARINGS = ["fair", "fair-unequal", "fair-unequal-one-way", "seniority", "seniority-always-overtaking", "groups",
            "fair-downloads"]


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("sharing", SHARINGS)
def test_kernel_equals_reference_with_a_stream_cap(sharing: str, cap: int, deterministic: bool):
    """Each model that takes a cap (fair with equal and unequal interfaces, seniority with and
    without overtakes, released groups, fair downloads), three caps, mean and sampled durations,
    four disciplines on graphs taken in turn at 1 to 8 workers."""
    model_of, interfaces = capped(sharing, cap)
    k = SHARINGS.index(sharing) + CAPS.index(cap)
    for j, name in enumerate(DISCIPLINES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = run_both(model, (1, 3, 5, 8)[(k + j) % 4], model_of, shaped_link(model, interfaces),
                                     deterministic=deterministic, name=name, seed=j)
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("order", [PriorityOrder(), RandomOrder()], ids=["priority", "random"])
@pytest.mark.parametrize("sharing", ["fair", "seniority", "groups"])
def test_kernel_admits_in_the_orders_order(sharing: str, order: object):
    """Waiting transfers are admitted in first-use order and in the random order's draws (the
    reference's Python generator, drawn before the run), two caps, on every zoo graph."""
    for j, model in enumerate(GRAPHS):
        model_of, interfaces = capped(sharing, (2, 6)[j % 2])
        kernel, reference = run_both(model, 2 + j, model_of, shaped_link(model, interfaces), deterministic=j % 2 == 0,
                                     name="async", seed=j, order=order)
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("sharing", ["fair", "fair-unequal", "seniority", "groups"])
def test_kernel_records_admissions_under_a_stream_cap(sharing: str):
    """A capped transfer is admitted when a stream frees, later than it is requested: the
    recorded timeline (requested and admitted times, to the bit) is the reference's."""
    model_of, interfaces = capped(sharing, 2)
    for j, (model, name) in enumerate([("inception", "async"), ("vgg", "static:0.8")]):
        kernel, reference = run_both(model, 4 + j, model_of, shaped_link(model, interfaces), deterministic=False,
                                     name=name, seed=j, record_steps=2)
        transfers = reference.timeline.transfers
        assert any(admitted > requested for _, _, requested, admitted, *_ in transfers)
        assert kernel.timeline == reference.timeline
        assert_same_run(kernel, reference)


def test_kernel_holds_stream_caps():
    for sharing in (FairSharing(max_streams=2), SenioritySharing(max_streams=1),
                    SenioritySharing(join_window_s=0.5, max_streams=4)):
        assert unsupported_setting(sharing=sharing) is None


@needs_numba
@pytest.mark.parametrize("words", [["--max-streams", "2"], ["--max-streams", "1", "--sharing", "fair"],
                                   ["--max-streams", "3", "--order", "random", "--sync", "sync"]])
def test_predict_with_a_stream_cap_runs_on_the_kernel(words: list[str], tmp_path, graph_file, monkeypatch):
    """`replay predict --max-streams K` replays on the kernel under "auto"."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)
