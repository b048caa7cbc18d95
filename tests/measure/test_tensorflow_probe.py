"""validate's TensorFlow probe: a model file of the step's tensors, and its measurement as a link probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracetool.measure.probe_graph_schedule import GraphSchedule
from tracetool.measure.probe_schedule import ProbeSchedule
from tracetool.measure.tensorflow_probe import (
    graph_twin_probe_model_source,
    link_probe_of_measurement,
    probe_model_source,
    twin_probe_model_source,
)
from tracetool.measure.transports import TENSORFLOW_TRANSPORT

TENSOR_BYTES = [4, 1026, 40_000]  # one scalar, one size that is not whole float32s, one larger tensor


# stage 0 reads tensor 0, stage 1 tensors 1 and 2; tensor 2's gradient leaves after stage 0
TWIN = ProbeSchedule(tensor_bytes=tuple(TENSOR_BYTES), gate_stage=(0, 1, 1), release_after=(2, 2, 1),
                     stage_compute_s=(0.001, 0.002), before_s=0.0005)


# groups 0 (reads tensor 0) and 1 (reads tensor 1) wait for nothing else; group 2 reads tensor 2
# after group 1; tensor 0's gradient leaves after group 0, tensor 2's after group 2, tensor 1's last
GRAPH_TWIN = GraphSchedule(tensor_bytes=tuple(TENSOR_BYTES), gates=((0,), (1,), (2,)), group_inputs=((), (), (1,)),
                           group_compute_s=(0.001, 0.002, 0.001), release_group=(0, -1, 2))


# group 0 computes a microsecond, far less than a call of it costs, so it folds into group 1
SHORT_FIRST_GROUP = GraphSchedule(tensor_bytes=tuple(TENSOR_BYTES), gates=((0,), (1,), (1,)), group_inputs=((), (0,)),
                                  group_compute_s=(1e-6, 0.002), release_group=(1, 1, -1))


def _training_graph(tmp_path: Path, compute_s: float = 0.001, twin: bool | str = False,
                    graph_twin: GraphSchedule = GRAPH_TWIN):
    from tracetool.collect.training_graph import build_training_graph

    model_file = tmp_path / "probe_model.py"
    model_file.write_text(graph_twin_probe_model_source("mlp", graph_twin, compute_s) if twin == "graph"
                          else twin_probe_model_source("mlp", TWIN, compute_s) if twin
                          else probe_model_source("mlp", TENSOR_BYTES, compute_s))
    return build_training_graph(str(model_file), batch_size=1, optimizer="sgd",
                                cluster={"ps": ["localhost:2222"], "worker": ["localhost:2223"]}, worker_task=0)


def test_the_probe_model_downloads_each_tensor_once_at_its_size(tmp_path: Path):
    """Every tensor becomes a PS variable the worker reads whole, exactly once per step (a second
    read would send it twice), rounded up to whole float32s."""
    import tensorflow as tf

    training = _training_graph(tmp_path)
    trainable = [v for v in training.variables if v["trainable"]]
    assert [v["bytes"] for v in trainable] == [4, 1028, 40_000]
    assert all(v["read_by_worker"] == "whole" for v in trainable)
    for variable in trainable:
        reads = [op for op in training.graph.get_operations()
                 if op.type == "ReadVariableOp" and op.inputs[0].op.name == variable["name"]
                 and any("/job:worker" in c.device for c in op.outputs[0].consumers())]
        assert len(reads) == 1, variable["name"]
    assert isinstance(training.loss, tf.Tensor)


def _gradient_waits(training) -> dict[str, tuple[set[str], int]]:
    """Per variable: the variables whose reads its applied gradient waits for, and how many
    compute waits (Python functions) it waits for."""
    applies = [op for op in training.graph.get_operations() if op.type == "ResourceApplyGradientDescent"]
    waits = {}
    for apply in applies:
        seen, stack, reads, computes = set(), [apply.inputs[2].op], set(), 0
        while stack:
            op = stack.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.type == "ReadVariableOp":
                reads.add(op.inputs[0].op.name)
            computes += op.type in ("PyFunc", "PyFuncStateless")
            stack.extend(tensor.op for tensor in op.inputs)
        waits[apply.inputs[0].op.name] = (reads, computes)
    return waits


def test_every_gradient_waits_for_every_download_and_the_compute(tmp_path: Path):
    """The reference step, as backpropagation does: no upload can start before the whole forward
    step is done."""
    waits = _gradient_waits(_training_graph(tmp_path))
    assert len(waits) == len(TENSOR_BYTES)
    for reads, computes in waits.values():
        assert reads == {f"tensor_{index}" for index in range(len(TENSOR_BYTES))}
        assert computes == 1


def test_the_twin_waits_stage_by_stage(tmp_path: Path):
    """The model's twin: a gradient waits for its own tensor and for the stages done before it
    leaves (and through them for their tensors), not for later stages' tensors."""
    waits = _gradient_waits(_training_graph(tmp_path, twin=True))
    # the step-start compute, then stages 0 and 1
    assert waits["tensor_0"] == ({"tensor_0", "tensor_1", "tensor_2"}, 3)
    assert waits["tensor_1"] == ({"tensor_0", "tensor_1", "tensor_2"}, 3)
    # after stage 0 only: tensor 1 is read by stage 1, which it does not wait for
    assert waits["tensor_2"] == ({"tensor_0", "tensor_2"}, 2)


def test_the_graph_twin_waits_only_for_its_groups_inputs(tmp_path: Path):
    """The graph-shaped twin: a gradient waits for the groups before it in the graph, not for
    groups beside it, so TensorFlow may run a group while another's tensor is still arriving."""
    waits = _gradient_waits(_training_graph(tmp_path, twin="graph"))
    assert waits["tensor_0"] == ({"tensor_0"}, 1)  # group 0 alone
    assert waits["tensor_2"] == ({"tensor_1", "tensor_2"}, 2)  # groups 1 and 2
    assert waits["tensor_1"] == ({"tensor_0", "tensor_1", "tensor_2"}, 3)  # every group


# groups 0 (reads tensor 0) and 1 (reads tensor 1) wait for nothing else; group 2 reads tensor 2
# after group 0, and the PS takes 2 KB from the worker, made by group 0, before it sends tensor 2
PULLING_TWIN = GraphSchedule(tensor_bytes=tuple(TENSOR_BYTES), gates=((0,), (1,), (2,)), group_inputs=((), (), (0,)),
                             group_compute_s=(0.001, 0.002, 0.001), release_group=(0, -1, 2),
                             pull_bytes=(2048,), pull_group=(0,), pulled_by=((), (), (0,)))


def test_the_ps_takes_the_pulled_tensor_from_the_worker_before_it_sends_the_tensor(tmp_path: Path):
    """The pulled tensor is made on the worker after group 0 and summed on the PS into tensor 2's
    read, so TensorFlow sends its 2 KB up before tensor 2 can come down; tensor 2's gradient is
    still its own size and leaves after group 2, and the other tensors are read as before."""
    training = _training_graph(tmp_path, twin="graph", graph_twin=PULLING_TWIN)
    ops = training.graph.get_operations()
    taken = [op for op in ops if "/job:ps" in op.device and not op.type.startswith("ResourceApply")
             and any("/job:worker" in t.op.device for t in op.inputs)]
    assert len(taken) == 1
    pulled = taken[0].inputs[0]
    assert pulled.op.type == "Fill" and pulled.shape.num_elements() * 4 == 2048
    made_from = {t.op.type for t in pulled.op.inputs[1].op.inputs}
    assert "Reshape" in made_from  # group 0's wait, reshaped to a scalar
    sent = [op for op in ops if op.type == "AddV2" and "/job:ps" in op.device]
    assert len(sent) == 1 and sent[0].outputs[0].shape.num_elements() == 10_000
    assert all(consumer.device.startswith("/job:worker") for consumer in sent[0].outputs[0].consumers())
    waits = _gradient_waits(training)
    assert waits["tensor_2"] == ({"tensor_0", "tensor_2"}, 2)  # groups 0 and 2
    assert waits["tensor_0"] == ({"tensor_0"}, 1)


def test_a_group_shorter_than_its_call_is_folded_into_the_next(tmp_path: Path):
    """Group 0 becomes part of group 1: one wait, for both tensors' reads."""
    waits = _gradient_waits(_training_graph(tmp_path, twin="graph", graph_twin=SHORT_FIRST_GROUP))
    assert waits == {f"tensor_{i}": ({"tensor_0", "tensor_1", "tensor_2"}, 1) for i in range(3)}


def test_a_precise_wait_is_never_short_and_a_call_costs_something():
    import time

    from tracetool.measure.probe_model import _wait_precisely, measured_call_cost_s

    for seconds in (0.0002, 0.003):
        start = time.perf_counter()
        _wait_precisely(seconds)()
        assert seconds - 25e-6 <= time.perf_counter() - start < seconds + 0.05
    assert 1e-6 < measured_call_cost_s(calls=16, steps=3) < 0.01


def test_waits_on_one_core_take_turns_whatever_the_threads():
    """A graph twin's groups wait on as many cores as the model computes on: four waits of 20 ms
    started together on four threads take 80 ms on one core and 40 ms on two."""
    import threading
    import time

    from tracetool.measure.probe_model import _wait_precisely

    for cores, least_s in ((1, 0.08), (2, 0.04)):
        wait = _wait_precisely(0.02, threading.BoundedSemaphore(cores))
        threads = [threading.Thread(target=wait) for _ in range(4)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert least_s - 1e-4 <= time.perf_counter() - start < least_s + 0.03


def test_the_measurement_becomes_a_link_probe_of_every_run():
    measured = {"bandwidth_bps": 25e6, "points": [
        {"workers": 1, "steps_per_second": 0.64, "run_steps_per_second": [0.63, 0.65]},
        {"workers": 2, "steps_per_second": 1.2, "cpu_saturated": True},
    ]}
    probe = link_probe_of_measurement(measured, 1000, 1004, 0.012, "cubic")
    assert probe["transport"] == TENSORFLOW_TRANSPORT
    assert [(p["workers"], p["steps_per_second"]) for p in probe["points"]] == [(1, 0.63), (1, 0.65), (2, 1.2)]
    assert [p["cpu_saturated"] for p in probe["points"]] == [False, False, True]
    assert (probe["download_bytes"], probe["upload_bytes"], probe["compute_s"]) == (1000, 1004, 0.012)
    # no single connection was watched: the efficiencies are neutral until the calibration fits them
    assert probe["contention_efficiency"] == probe["download_reverse_efficiency"] == 1.0


@pytest.mark.parametrize("compute_s", [0.0, 0.0125])
def test_the_model_file_is_plain_python_naming_its_shape(compute_s: float):
    source = probe_model_source("keras:ResNet50", TENSOR_BYTES, compute_s)
    namespace: dict = {}
    exec(compile(source, "probe_model.py", "exec"), namespace)
    assert namespace["TENSOR_BYTES"] == TENSOR_BYTES and namespace["COMPUTE_S"] == compute_s
    assert callable(namespace["build"]) and "keras:ResNet50" in source


def test_the_twin_model_file_names_its_schedule():
    source = twin_probe_model_source("inception", TWIN, 0.0125)
    namespace: dict = {}
    exec(compile(source, "probe_model.py", "exec"), namespace)
    assert namespace["TENSOR_BYTES"] == TENSOR_BYTES and namespace["COMPUTE_S"] == 0.0125
    assert (namespace["GATE_STAGE"], namespace["RELEASE_AFTER"]) == ([0, 1, 1], [2, 2, 1])
    assert namespace["STAGE_COMPUTE_S"] == [0.001, 0.002] and namespace["BEFORE_S"] == 0.0005
    assert "3.5 ms of compute in 2 stages" in source


@pytest.mark.parametrize("shape, written", [("chain", "STAGE_COMPUTE_S"), ("graph", "GROUP_COMPUTE_S")])
def test_validate_writes_the_twin_of_the_shape_asked_for(tmp_path: Path, shape: str, written: str):
    """``--twin-shape``: the probe's model file holds the chain's stages or the graph's groups,
    computing alike, and its runs include one worker (the calibration meets that rate)."""
    from tests.conftest import TRACES_DIR
    from tracetool.graph.stepgraph import load_stepgraph
    from tracetool.measure.measurement import MeasureRequest
    from tracetool.measure.tensorflow_probe import tensorflow_probe_request

    graph = load_stepgraph(TRACES_DIR / "inception" / "graph.json")
    measure = MeasureRequest(model="inception", batch_size=32, workers=(2, 3), out_dir=tmp_path / "m",
                             bandwidth_bps=25e6)
    request = tensorflow_probe_request(measure, graph, 0.01, 20.0, 1, tmp_path, twin_shape=shape)
    assert request.workers == (1, 2, 3) and request.batch_size == 1
    namespace: dict = {}
    exec(compile(Path(request.model).read_text(), "probe_model.py", "exec"), namespace)
    assert written in namespace and callable(namespace["build"])
    if shape == "graph":  # the model's one compute thread, and threads to spare for its waiters and gRPC's handlers
        assert namespace["COMPUTE_THREADS"] == measure.inter_op_threads == 1
        assert request.inter_op_threads > 2
    else:
        assert request.inter_op_threads == measure.inter_op_threads
    with pytest.raises(ValueError, match="chain or graph"):
        tensorflow_probe_request(measure, graph, 0.01, 20.0, 1, tmp_path, twin_shape="tree")
