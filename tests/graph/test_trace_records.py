"""Parsing of TensorFlow's label strings and device names."""

from tracetool.graph.trace_records import (
    normalize_device,
    parse_op_label,
    parse_transfer_label,
    producer_of_rendezvous,
    strip_output_index,
)


def test_op_label_splits_data_and_control_inputs():
    """A compute label yields name, op type, data inputs without output index, control inputs."""
    label = "[mklcpu 0.1MB 0.1MB] fc1/Relu = _MklNativeFusedMatMul(features, fc1/MatMul/ReadVariableOp_S1:0, ^x/y)"
    assert parse_op_label(label) == (
        "fc1/Relu",
        "_MklNativeFusedMatMul",
        ("features", "fc1/MatMul/ReadVariableOp_S1"),
        ("x/y",),
    )


def test_op_label_without_inputs():
    """An op with no inputs parses to empty input tuples."""
    assert parse_op_label("labels/min = Const()") == ("labels/min", "Const", (), ())


def test_transfer_label_gives_bytes_edge_and_devices():
    """A RecvTensor label gives bytes, rendezvous edge and canonical devices."""
    label = (
        "[73728B] [100.77Mb/s] edge_18_Conv2D_1/ReadVariableOp from /job:ps/replica:0/task:0/device:CPU:0 "
        "to /job:worker/replica:0/task:0/device:CPU:0"
    )
    info = parse_transfer_label(label)
    assert info is not None
    assert info.bytes == 73728
    assert info.rendezvous == "edge_18_Conv2D_1/ReadVariableOp"
    assert info.src_device == "/job:ps/replica:0/task:0/device:CPU:0"
    assert info.dst_device == "/job:worker/replica:0/task:0/device:CPU:0"


def test_transfer_label_with_rounded_size():
    """TF rounds large sizes to MB; the parser turns them back into bytes (1 MB = 1024^2 B)."""
    info = parse_transfer_label(
        "[2.0MB] [14.0Gb/s] edge_22_fc3/MatMul/ReadVariableOp from /job:ps/task:0/cpu:0 to /job:worker/task:0/cpu:0"
    )
    assert info is not None and info.bytes == 2 * 1024 * 1024


def test_old_and_new_device_names_normalize_alike():
    """TF 1.x names, GPU stream names and TF 2 names map to one canonical device plus a lane hint."""
    assert normalize_device("/job:localhost/replica:0/task:0/cpu:0") == (
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "",
    )
    assert normalize_device("/gpu:0/stream:12") == ("/job:localhost/replica:0/task:0/device:GPU:0", "stream:12")
    assert normalize_device("/job:ps/replica:0/task:0/device:CPU:0") == ("/job:ps/replica:0/task:0/device:CPU:0", "")


def test_rendezvous_names():
    """Edge names and output indices reduce to the producing op."""
    assert producer_of_rendezvous("edge_16_fc1/MatMul/ReadVariableOp") == "fc1/MatMul/ReadVariableOp"
    assert strip_output_index("split:1") == "split"
    assert strip_output_index("a/b") == "a/b"
