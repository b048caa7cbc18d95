"""The compiled kernel replays ``fair-per-transfer`` sharing as the reference engine does: processor
sharing where the workers' interfaces do not bind (replay.engine.kernel.processor_link) and
per-transfer max-min fairness under them where they do (replay.engine.kernel.maxmin_link), with
and without ``--max-streams``, and predictions with it run on it."""

from __future__ import annotations

import pytest

from replay.engine.kernel import unsupported_setting
from replay.engine.kernel.support import SHARING_MAXMIN, SHARING_PROCESSOR, direction_codes
from replay.engine.order import PriorityOrder, RandomOrder
from replay.engine.sharing import TransferFairSharing
from tests.replay.engine.test_kernel import ZOO_GRAPHS, assert_same_run, needs_numba
from tests.replay.engine.test_kernel_directions import run_both, shaped_link
from tests.replay.engine.test_kernel_sync import assert_predicts_on_the_kernel

GRAPHS = [p.parent.name for p in ZOO_GRAPHS]
DISCIPLINES = ["async", "sync", "static:0.8", "saps:1"]
# equal: processor sharing both ways; slow-workers: max-min under one cap for all; both: under a
# cap per worker; downloads-only: max-min on downloads, processor sharing on uploads
INTERFACES = ["equal", "slow-workers", "both", "downloads-only", "uploads-only"]
CAPS = [None, 1, 4]


def test_each_direction_gets_the_references_link():
    """Processor sharing where interfaces do not bind, max-min where they do, per direction."""
    expected = {"equal": (SHARING_PROCESSOR, SHARING_PROCESSOR), "slow-workers": (SHARING_MAXMIN, SHARING_MAXMIN),
                "both": (SHARING_MAXMIN, SHARING_MAXMIN), "downloads-only": (SHARING_MAXMIN, SHARING_PROCESSOR),
                "uploads-only": (SHARING_PROCESSOR, SHARING_MAXMIN)}
    for interfaces, codes in expected.items():
        link = shaped_link("mlp", interfaces)
        assert direction_codes(TransferFairSharing(), link, 5) == codes
        links = [TransferFairSharing().new_link(capacity, link.worker_payload_caps(5, upload=upload), 5)
                 for capacity, upload in ((link.download_payload_bps(), False), (link.upload_payload_bps(), True))]
        assert [type(k).__name__ for k in links] == [
            "_SharedProcessorLink" if code == SHARING_PROCESSOR else "_MaxMinLink" for code in codes]


@needs_numba
@pytest.mark.parametrize("deterministic", [True, False], ids=["mean", "sampled"])
@pytest.mark.parametrize("cap", CAPS, ids=["uncapped", "cap-1", "cap-4"])
@pytest.mark.parametrize("interfaces", INTERFACES)
def test_kernel_equals_reference_with_per_transfer_sharing(interfaces: str, cap: int | None, deterministic: bool):
    """Every shape of interfaces, without a stream cap and with caps 1 and 4, mean and sampled
    durations, four disciplines on graphs taken in turn at 1 to 9 workers."""
    k = INTERFACES.index(interfaces) + CAPS.index(cap)
    for j, name in enumerate(DISCIPLINES):
        model = GRAPHS[(k + j) % len(GRAPHS)]
        kernel, reference = run_both(model, (1, 3, 6, 9)[(k + j) % 4], TransferFairSharing(cap),
                                     shaped_link(model, interfaces), deterministic=deterministic, name=name, seed=j)
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("workers", [16, 48])
@pytest.mark.parametrize("interfaces", ["equal", "slow-workers", "both"])
def test_kernel_equals_reference_with_many_transfers_in_flight(interfaces: str, workers: int):
    """Dozens of workers with hundreds of transfers in flight (inception), sampled durations."""
    kernel, reference = run_both("inception", workers, TransferFairSharing(), shaped_link("inception", interfaces),
                                 deterministic=False, name="async", seed=3)
    assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("order", [PriorityOrder(), RandomOrder()], ids=["priority", "random"])
@pytest.mark.parametrize("interfaces", ["equal", "both"])
def test_kernel_admits_per_transfer_in_the_orders_order(interfaces: str, order: object):
    """Capped per-transfer sharing admits in first-use order and in the random order's draws, on
    every zoo graph."""
    for j, model in enumerate(GRAPHS):
        kernel, reference = run_both(model, 2 + j, TransferFairSharing((2, 6)[j % 2]), shaped_link(model, interfaces),
                                     deterministic=j % 2 == 1, name="async", seed=j, order=order)
        assert_same_run(kernel, reference)


@needs_numba
@pytest.mark.parametrize("cap", CAPS, ids=["uncapped", "cap-1", "cap-4"])
@pytest.mark.parametrize("interfaces", ["equal", "both"])
def test_kernel_records_per_transfer_timelines(interfaces: str, cap: int | None):
    """The recorded timeline (requests, admissions, departures) is the reference's, to the bit."""
    for j, (model, name) in enumerate([("resnet", "async"), ("alexnet", "backup")]):
        kernel, reference = run_both(model, 3 + j, TransferFairSharing(cap), shaped_link(model, interfaces),
                                     deterministic=False, name=name, seed=j, record_steps=2)
        assert reference.timeline is not None and reference.timeline.transfers
        assert kernel.timeline == reference.timeline
        assert_same_run(kernel, reference)


def test_kernel_holds_per_transfer_sharing():
    for cap in CAPS:
        assert unsupported_setting(sharing=TransferFairSharing(cap)) is None


@needs_numba
@pytest.mark.parametrize("words", [["--sharing", "fair-per-transfer"],
                                   ["--sharing", "fair-per-transfer", "--max-streams", "2", "--sync", "sync"],
                                   ["--sharing", "fair-per-transfer", "--worker-bandwidths", "10mbit,50mbit"]])
def test_predict_with_per_transfer_sharing_runs_on_the_kernel(words: list[str], tmp_path, graph_file, monkeypatch):
    """`replay predict --sharing fair-per-transfer` replays on the kernel under "auto"."""
    assert_predicts_on_the_kernel(words, tmp_path, graph_file, monkeypatch)
