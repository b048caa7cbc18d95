"""The graph-shaped twin's schedule: groups of the worker's compute ops that wait only for their
own inputs, read from a step graph."""

from __future__ import annotations

import pytest

from replay.synthetic import GraphBuilder
from tests.conftest import TRACES_DIR
from tests.measure.test_probe_schedule import _two_layer_step
from tracetool.graph.stepgraph import (
    COMPUTE,
    DOWNLOAD,
    PS_COMPUTE,
    STEP_END,
    STEP_START,
    UPLOAD,
    StepGraph,
    load_stepgraph,
)
from tracetool.measure.probe_graph_schedule import GraphSchedule, fold_short_groups, graph_schedule
from tracetool.measure.probe_schedule import probe_schedule, release_order
from tracetool.measure.tensorflow_probe import graph_twin_probe_model_source


def test_each_group_waits_for_its_own_inputs_only():
    """The input op needs no tensor, so it runs from the step's start; f1 waits for w1 and the
    input, f2 for w2 and f1; b2 joins f2's group (its only successor, reading nothing else); b1
    starts a group after b2, which sends a gradient and so must end a group."""
    schedule = graph_schedule(_two_layer_step())
    assert schedule.tensor_bytes == (1000, 4000)
    # groups: input, f1, f2+b2, b1 (in the profiled order)
    assert schedule.group_inputs == ((), (0,), (1,), (2,))
    assert schedule.gates == ((1,), (2,))
    assert schedule.group_compute_s == pytest.approx((0.0004, 0.001, 0.003, 0.0017))
    # w1's gradient (g1) after b1's group, w2's (g2) after b2's
    assert schedule.release_group == (3, 2)


def test_the_groups_compute_what_the_chain_computes():
    """Both twins take the worker's busy time from the same ops, so they compute alike, scaled
    alike by the replay's calibration; only their shape differs."""
    for model in ("inception", "resnet", "vgg", "alexnet"):
        graph = load_stepgraph(TRACES_DIR / model / "graph.json")
        for scale in (1.0, 0.625):
            assert graph_schedule(graph, scale).compute_s == pytest.approx(probe_schedule(graph, scale).compute_s)


def test_groups_follow_their_inputs_and_every_read_tensor_gates_a_group():
    graph = load_stepgraph(TRACES_DIR / "inception" / "graph.json")
    schedule = graph_schedule(graph)
    assert all(all(i < g for i in inputs) for g, inputs in enumerate(schedule.group_inputs))
    assert all(gates for gates in schedule.gates)  # every inception variable is read by some op
    groups = len(schedule.group_compute_s)
    assert all(-1 <= g < groups for g in schedule.release_group)
    # the 40 tensors an upload of their size matches (of inception's 41 uploads) leave after their
    # own op's group; the 19 others after every group
    matched = release_order(graph, graph.node_ids_of_kind("download"))
    assert [g >= 0 for g in schedule.release_group] == [u is not None for u in matched]
    assert sum(u is not None for u in matched) == 40


# group 0 (0.01 ms, reads tensor 0) feeds groups 1 (2 ms) and 3 (1 ms, sends tensor 1's gradient);
# group 2 (0.02 ms, reads tensor 1) feeds group 3; nothing waits for group 4 (0.03 ms, after group
# 1), which sends nothing; tensor 0's gradient leaves after group 1
SHORT_GROUPS = GraphSchedule(tensor_bytes=(100, 200), gates=((0,), (2,)), group_inputs=((), (0,), (), (0, 2), (1,)),
                             group_compute_s=(1e-5, 2e-3, 2e-5, 1e-3, 3e-5), release_group=(1, 3))


def test_short_groups_fold_into_the_groups_after_them():
    """A group shorter than the twin's cost of a call passes what it waited for to the groups that
    waited for it, and its compute to the first of them; one that sends a gradient stays."""
    folded = fold_short_groups(SHORT_GROUPS, 1e-4)
    # left: the old groups 1 and 3 (now 0 and 1); group 4's compute went to group 1, its last input
    assert folded.group_inputs == ((), ())
    assert folded.gates == ((0, 1), (1,))  # group 3 waits for tensor 0 through group 0, for 1 through 2
    assert folded.group_compute_s == pytest.approx((2e-3 + 1e-5 + 3e-5, 1e-3 + 2e-5))
    assert folded.release_group == (0, 1)
    # a sender stays however short; nothing shorter than the bound leaves the schedule as it was
    assert fold_short_groups(SHORT_GROUPS, 1.5e-3).group_compute_s == pytest.approx((2e-3 + 4e-5, 1e-3 + 2e-5))
    assert fold_short_groups(SHORT_GROUPS, 1e-6) == SHORT_GROUPS
    with pytest.raises(ValueError, match="at least 0"):
        fold_short_groups(SHORT_GROUPS, -1.0)


def _tensors_waited_for(schedule: GraphSchedule) -> list[set[int]]:
    """Per group, every tensor it waits for, through its gates and the groups before it."""
    gated: list[set[int]] = [set() for _ in schedule.group_compute_s]
    for tensor, groups in enumerate(schedule.gates):
        for g in groups:
            gated[g].add(tensor)
    waited: list[set[int]] = []
    for g, inputs in enumerate(schedule.group_inputs):
        waited.append(gated[g].union(*(waited[i] for i in inputs)))
    return waited


@pytest.mark.parametrize("model", ["inception", "resnet", "vgg", "alexnet"])
def test_folding_keeps_what_every_gradient_waits_for(model: str):
    """Folded or not, each gradient waits for the same tensors, and the groups compute what they
    did."""
    schedule = graph_schedule(load_stepgraph(TRACES_DIR / model / "graph.json"))
    folded = fold_short_groups(schedule, 2e-4)
    assert len(folded.group_compute_s) < len(schedule.group_compute_s)
    assert all(all(i < g for i in inputs) for g, inputs in enumerate(folded.group_inputs))
    before, after = _tensors_waited_for(schedule), _tensors_waited_for(folded)
    for old, new in zip(schedule.release_group, folded.release_group, strict=True):
        assert (old < 0) == (new < 0)
        if old >= 0:
            assert after[new] == before[old]
    assert folded.compute_s == pytest.approx(schedule.compute_s, rel=1e-9)
    unsent = [c for g, c in enumerate(folded.group_compute_s) if g not in folded.release_group]
    assert min(unsent, default=1.0) >= 2e-4


def test_the_graph_twin_model_file_names_its_shape():
    schedule = graph_schedule(_two_layer_step())
    source = graph_twin_probe_model_source("inception", schedule, 0.0125)
    assert "2 tensors, 5,000 B each way" in source and "in 4 groups of the model's ops" in source
    namespace: dict = {}
    exec(compile(source.replace("from tracetool.measure.probe_model import build_graph_twin_probe_loss", ""),
                 "probe_model.py", "exec"), namespace)
    assert namespace["GATES"] == [[1], [2]] and namespace["RELEASE_GROUP"] == [3, 2]
    assert namespace["GROUP_INPUTS"] == [[], [0], [1], [2]]


def test_the_widest_level_counts_groups_no_path_joins():
    """Groups 1, 2 and 3 all wait for group 0 only, so all three can be ready at once; group 4
    waits for them."""
    from tracetool.measure.probe_graph_schedule import widest_level

    schedule = GraphSchedule(tensor_bytes=(8,), gates=((0,),), group_inputs=((), (0,), (0,), (0,), (1, 2, 3)),
                             group_compute_s=(0.001,) * 5, release_group=(4,))
    assert widest_level(schedule) == 3
    chain = GraphSchedule(tensor_bytes=(8,), gates=((0,),), group_inputs=((), (0,), (1,)),
                          group_compute_s=(0.001,) * 3, release_group=(2,))
    assert widest_level(chain) == 1


def _lookup_step() -> StepGraph:
    """An embedding lookup on the PS, as widedeep's: the worker makes the batch's ids (0.1 ms), the
    PS takes them (2 KB up) and gathers the rows (32 KB down) that the embedding op reads; a dense
    layer reads w (2 KB) from the step's start. The dense layer's gradient is 2 KB like the ids and
    leaves after them, the rows' gradient last."""
    b = GraphBuilder()
    start = b.add(STEP_START, "step_start")
    table = b.add(PS_COMPUTE, "table", 5.0, start_offset_us=0.0, after=(start,))
    w = b.add(DOWNLOAD, "w", bytes_=2048, start_offset_us=50.0, after=(start,))
    ids = b.add(COMPUTE, "ids", 100.0, start_offset_us=0.0, after=(start,))
    sent = b.add(UPLOAD, "ids_up", bytes_=2048, start_offset_us=100.0, after=(ids,))
    lookup = b.add(PS_COMPUTE, "lookup", 20.0, start_offset_us=400.0, after=(table, sent))
    rows = b.add(DOWNLOAD, "rows", bytes_=32768, start_offset_us=420.0, after=(lookup,))
    dense = b.add(COMPUTE, "dense", 1000.0, start_offset_us=300.0, after=(w,))
    embed = b.add(COMPUTE, "embed", 500.0, start_offset_us=1500.0, after=(rows, dense))
    back = b.add(COMPUTE, "back", 800.0, start_offset_us=2000.0, after=(embed,))
    g_w = b.add(UPLOAD, "g_w", bytes_=2048, start_offset_us=2800.0, after=(back,))
    back_rows = b.add(COMPUTE, "back_rows", 300.0, start_offset_us=2800.0, after=(back,))
    g_rows = b.add(UPLOAD, "g_rows", bytes_=32768, start_offset_us=3100.0, after=(back_rows,))
    b.add(STEP_END, "step_end", after=(g_w, g_rows))
    return b.build()


def test_a_download_the_ps_makes_from_a_worker_tensor_pulls_it_first():
    """The rows wait for the ids the PS took from the worker, made by the ids' group; the ids are
    no gradient, though the same size as w's (which leaves after the backward pass); groups that
    read the rows come after the ids' group."""
    schedule = graph_schedule(_lookup_step())
    assert schedule.tensor_bytes == (2048, 32768)
    assert schedule.pull_bytes == (2048,)
    ids_group = schedule.pull_group[0]
    assert ids_group >= 0
    assert schedule.pulled_by == ((), (0,))
    assert schedule.release_group[0] != ids_group  # w's gradient is g_w, not the ids
    assert all(ids_group < g for g in schedule.gates[1])
    folded = fold_short_groups(schedule, 1e-3)  # the ids' 0.1 ms group stays: the PS pulls from it
    assert folded.pull_bytes == (2048,) and folded.pulled_by == ((), (0,))
    assert folded.group_compute_s[folded.pull_group[0]] == pytest.approx(1e-4)
    source = graph_twin_probe_model_source("widedeep", schedule, 0.001)
    namespace: dict = {}
    exec(compile(source.replace("from tracetool.measure.probe_model import build_graph_twin_probe_loss", ""),
                 "probe_model.py", "exec"), namespace)
    assert namespace["PULL_BYTES"] == [2048] and namespace["PULLED_BY"] == [[], [0]]
    assert "PULL_BYTES, PULL_GROUP, PULLED_BY)" in source


@pytest.mark.parametrize("model", ["inception", "resnet", "vgg", "alexnet", "mlp"])
def test_dense_models_pull_nothing_so_their_twins_stay_as_they_were(model: str):
    schedule = graph_schedule(load_stepgraph(TRACES_DIR / model / "graph.json"))
    assert schedule.pull_bytes == () and schedule.pulled_by == ()
    assert "PULL_BYTES" not in graph_twin_probe_model_source(model, schedule, 0.001)


def test_a_schedule_naming_pulls_it_does_not_have_is_refused():
    with pytest.raises(ValueError, match="1 pulled tensors but 0 groups"):
        GraphSchedule(tensor_bytes=(8,), gates=((0,),), group_inputs=((),), group_compute_s=(0.001,),
                      release_group=(0,), pull_bytes=(8,))
    with pytest.raises(ValueError, match="outside 0..0"):
        GraphSchedule(tensor_bytes=(8,), gates=((0,),), group_inputs=((),), group_compute_s=(0.001,),
                      release_group=(0,), pull_bytes=(8,), pull_group=(0,), pulled_by=((1,),))
