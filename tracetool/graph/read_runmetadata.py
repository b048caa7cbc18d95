"""Read a RunMetadata protobuf (binary ``.pb`` or text ``.pbtxt``) into a StepTrace."""

from __future__ import annotations

from pathlib import Path

from tracetool.errors import ToolError
from tracetool.graph.trace_records import (
    OpRecord,
    RendezvousPair,
    StepTrace,
    TransferInfo,
    normalize_device,
    parse_op_label,
    parse_transfer_label,
    strip_output_index,
)
from tracetool.tf_import import import_tensorflow_quietly

_SKIPPED_OPS = {"_SOURCE", "_SINK"}


def _load_message(path: Path) -> object:
    data = path.read_bytes()
    if not data:  # said before TensorFlow's import, which costs seconds
        raise ToolError(f"{path} is empty; give a RunMetadata written by 'tracetool profile'")
    try:
        import_tensorflow_quietly()
    except ImportError:
        raise ToolError(f"{path}: reading RunMetadata needs TensorFlow's protobuf classes, and TensorFlow is not "
                        "installed; install it with pip install 'tfsim[collector]', or give the step's "
                        ".timeline.json instead") from None
    from google.protobuf import message, text_format
    from tensorflow.core.protobuf import config_pb2

    metadata = config_pb2.RunMetadata()
    if path.suffix == ".pbtxt":
        try:
            text_format.Parse(data.decode("utf-8"), metadata)
        except (UnicodeDecodeError, text_format.ParseError) as exc:
            raise ToolError(f"{path} is not a RunMetadata text protobuf ({str(exc).splitlines()[0][:120]})") from None
    else:
        try:
            metadata.ParseFromString(data)
        except message.DecodeError:
            raise ToolError(
                f"{path} is not a RunMetadata protobuf (it does not decode); is the file damaged?"
            ) from None
    if not metadata.step_stats.dev_stats:
        raise ToolError(f"{path} holds no step stats; trace with RunOptions(trace_level=FULL_TRACE)")
    return metadata


def read_runmetadata(path: Path) -> StepTrace:
    metadata = _load_message(path)
    records: list[OpRecord] = []
    for dev in metadata.step_stats.dev_stats:  # type: ignore[attr-defined]
        device, lane_hint = normalize_device(dev.device)
        for node in dev.node_stats:
            if node.node_name in _SKIPPED_OPS:
                continue
            lane = lane_hint or f"thread:{node.thread_id}"
            start_us = float(node.all_start_micros)
            duration_us = float(max(node.all_end_rel_micros, node.op_end_rel_micros, 0))
            if node.node_name == "RecvTensor":
                transfer = parse_transfer_label(node.timeline_label)
                if transfer is None:
                    continue
                if node.output:  # the label rounds large sizes ("2.0MB"); the allocation is exact
                    exact = node.output[0].tensor_description.allocation_description.requested_bytes
                    if exact > 0:
                        transfer = TransferInfo(exact, transfer.rendezvous, transfer.src_device, transfer.dst_device)
                records.append(
                    OpRecord(device, transfer.rendezvous, "RecvTensor", start_us, duration_us, lane, transfer=transfer)
                )
                continue
            parsed = parse_op_label(node.timeline_label)
            if parsed is None:
                records.append(OpRecord(device, node.node_name, node.node_name, start_us, duration_us, lane))
                continue
            name, op, inputs, control = parsed
            records.append(OpRecord(device, node.node_name, op, start_us, duration_us, lane, inputs, control))
    pairs = _rendezvous_pairs(metadata)
    return StepTrace(tuple(records), pairs, "runmetadata", str(path))


def _rendezvous_pairs(metadata: object) -> tuple[RendezvousPair, ...]:
    sends: dict[str, tuple[str, str, str]] = {}
    recvs: dict[str, str] = {}
    for graph in metadata.partition_graphs:  # type: ignore[attr-defined]
        for node in graph.node:
            if node.op not in ("_Send", "_Recv", "_HostSend", "_HostRecv"):
                continue
            tensor = node.attr["tensor_name"].s.decode()
            send_device = normalize_device(node.attr["send_device"].s.decode())[0]
            recv_device = normalize_device(node.attr["recv_device"].s.decode())[0]
            if node.op.endswith("Send") and node.input:
                sends[tensor] = (strip_output_index(node.input[0]), send_device, recv_device)
            elif node.op.endswith("Recv"):
                recvs[tensor] = node.name
    return tuple(
        RendezvousPair(tensor, send_dev, recv_dev, producer, recvs[tensor])
        for tensor, (producer, send_dev, recv_dev) in sorted(sends.items())
        if tensor in recvs
    )
