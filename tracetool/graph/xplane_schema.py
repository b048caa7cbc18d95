"""The XSpace protobuf schema of the TF2 profiler, declared here so reading it needs no TensorFlow.

``tf.profiler.experimental`` and TensorBoard's profile plugin save ``<host>.xplane.pb``: one
``XSpace`` of planes (``/host:CPU``, ``/device:GPU:0``), lines (threads, GPU streams) and events
whose names and stats live in per-plane metadata tables. The message layout below is the
field-for-field copy of ``tsl/profiler/protobuf/xplane.proto`` (proto3), built into a private
descriptor pool so it never collides with TensorFlow's own copy when both are loaded.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "tfsim.xplane"
_F = descriptor_pb2.FieldDescriptorProto

# (message, [(field, number, type, label, message type or "", oneof index or None)])
_MESSAGES: list[tuple[str, list[tuple[str, int, int, int, str, int | None]]]] = [
    ("XSpace", [
        ("planes", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane", None),
        ("errors", 2, _F.TYPE_STRING, _F.LABEL_REPEATED, "", None),
        ("warnings", 3, _F.TYPE_STRING, _F.LABEL_REPEATED, "", None),
        ("hostnames", 4, _F.TYPE_STRING, _F.LABEL_REPEATED, "", None),
    ]),
    ("XPlane", [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("lines", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XLine", None),
        ("event_metadata", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane.EventMetadataEntry", None),
        ("stat_metadata", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XPlane.StatMetadataEntry", None),
        ("stats", 6, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
    ]),
    ("XLine", [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("display_id", 10, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("display_name", 11, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("timestamp_ns", 3, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("duration_ps", 9, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("events", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XEvent", None),
    ]),
    ("XEvent", [
        ("metadata_id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("offset_ps", 2, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", 0),
        ("num_occurrences", 5, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", 0),
        ("duration_ps", 3, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("stats", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
    ]),
    ("XStat", [
        ("metadata_id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("double_value", 2, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, "", 0),
        ("uint64_value", 3, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, "", 0),
        ("int64_value", 4, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", 0),
        ("str_value", 5, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", 0),
        ("bytes_value", 6, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, "", 0),
        ("ref_value", 7, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, "", 0),
    ]),
    ("XEventMetadata", [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("display_name", 4, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("metadata", 3, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, "", None),
        ("stats", 5, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "XStat", None),
        ("child_id", 6, _F.TYPE_INT64, _F.LABEL_REPEATED, "", None),
    ]),
    ("XStatMetadata", [
        ("id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, "", None),
        ("name", 2, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
        ("description", 3, _F.TYPE_STRING, _F.LABEL_OPTIONAL, "", None),
    ]),
]
_ONEOFS = {"XEvent": "data", "XStat": "value"}
_MAP_ENTRIES = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="tfsim/xplane.proto", package=_PACKAGE, syntax="proto3")
    for message_name, fields in _MESSAGES:
        message = proto.message_type.add(name=message_name)
        if message_name in _ONEOFS:
            message.oneof_decl.add(name=_ONEOFS[message_name])
        for name, number, kind, label, type_name, oneof in fields:
            field = message.field.add(name=name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if oneof is not None:
                field.oneof_index = oneof
        if message_name == "XPlane":
            for entry_name, value_type in _MAP_ENTRIES.items():
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=_F.TYPE_INT64, label=_F.LABEL_OPTIONAL)
                entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                                type_name=f".{_PACKAGE}.{value_type}")
    return proto


@lru_cache(maxsize=1)
def xspace_class() -> Any:
    """The XSpace message class (built once)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.XSpace"))
