"""The XSpace wire schema, declared here so that reading a capture needs only ``protobuf``.

Contract: ``XSpace``, ``XPlane``, ``XLine``, ``XEvent``, ``XStat``, ``XEventMetadata`` and
``XStatMetadata`` are protobuf message classes wire-compatible with the profiler's
``xplane.proto`` (the file format of ``*.xplane.pb``). Field numbers are the compatibility
contract; names are ours. Unknown fields in newer captures are kept by protobuf and ignored.

The schema is built from descriptors at import time, so no generated ``*_pb2.py`` and no
``protoc`` are needed.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "xlaprof.xspace"

# (field name, number, type, label, message type name or None, oneof index or None)
_T = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
_MESSAGES: dict[str, tuple[list[str], list[tuple]]] = {
    "XSpace": ([], [
        ("planes", 1, _T.TYPE_MESSAGE, _REP, "XPlane", None),
        ("errors", 2, _T.TYPE_STRING, _REP, None, None),
        ("warnings", 3, _T.TYPE_STRING, _REP, None, None),
        ("hostnames", 4, _T.TYPE_STRING, _REP, None, None),
    ]),
    "XPlane": ([], [
        ("id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("name", 2, _T.TYPE_STRING, _OPT, None, None),
        ("lines", 3, _T.TYPE_MESSAGE, _REP, "XLine", None),
        ("event_metadata", 4, _T.TYPE_MESSAGE, _REP, "XPlane.EventMetadataEntry", None),
        ("stat_metadata", 5, _T.TYPE_MESSAGE, _REP, "XPlane.StatMetadataEntry", None),
        ("stats", 6, _T.TYPE_MESSAGE, _REP, "XStat", None),
    ]),
    "XLine": ([], [
        ("id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("name", 2, _T.TYPE_STRING, _OPT, None, None),
        ("timestamp_ns", 3, _T.TYPE_INT64, _OPT, None, None),
        ("events", 4, _T.TYPE_MESSAGE, _REP, "XEvent", None),
        ("duration_ps", 9, _T.TYPE_INT64, _OPT, None, None),
        ("display_id", 10, _T.TYPE_INT64, _OPT, None, None),
        ("display_name", 11, _T.TYPE_STRING, _OPT, None, None),
    ]),
    "XEvent": (["data"], [
        ("metadata_id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("offset_ps", 2, _T.TYPE_INT64, _OPT, None, 0),
        ("duration_ps", 3, _T.TYPE_INT64, _OPT, None, None),
        ("stats", 4, _T.TYPE_MESSAGE, _REP, "XStat", None),
        ("num_occurrences", 5, _T.TYPE_INT64, _OPT, None, 0),
    ]),
    "XStat": (["value"], [
        ("metadata_id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("double_value", 2, _T.TYPE_DOUBLE, _OPT, None, 0),
        ("uint64_value", 3, _T.TYPE_UINT64, _OPT, None, 0),
        ("int64_value", 4, _T.TYPE_INT64, _OPT, None, 0),
        ("str_value", 5, _T.TYPE_STRING, _OPT, None, 0),
        ("bytes_value", 6, _T.TYPE_BYTES, _OPT, None, 0),
        ("ref_value", 7, _T.TYPE_UINT64, _OPT, None, 0),
    ]),
    "XEventMetadata": ([], [
        ("id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("name", 2, _T.TYPE_STRING, _OPT, None, None),
        ("metadata", 3, _T.TYPE_BYTES, _OPT, None, None),
        ("display_name", 4, _T.TYPE_STRING, _OPT, None, None),
        ("stats", 5, _T.TYPE_MESSAGE, _REP, "XStat", None),
        ("child_id", 6, _T.TYPE_INT64, _REP, None, None),
    ]),
    "XStatMetadata": ([], [
        ("id", 1, _T.TYPE_INT64, _OPT, None, None),
        ("name", 2, _T.TYPE_STRING, _OPT, None, None),
        ("description", 3, _T.TYPE_STRING, _OPT, None, None),
    ]),
}
# Protobuf encodes map<int64, V> as a repeated nested entry message with key=1, value=2.
_MAP_ENTRIES = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}


def _add_fields(message: descriptor_pb2.DescriptorProto, fields: list[tuple]) -> None:
    for name, number, ftype, label, type_name, oneof in fields:
        field = message.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = f".{_PACKAGE}.{type_name}"
        if oneof is not None:
            field.oneof_index = oneof


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="xlaprof/xspace.proto", package=_PACKAGE, syntax="proto3")
    for name, (oneofs, fields) in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        _add_fields(message, fields)
        if name == "XPlane":
            for entry_name, value_type in _MAP_ENTRIES.items():
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                _add_fields(entry, [("key", 1, _T.TYPE_INT64, _OPT, None, None),
                                    ("value", 2, _T.TYPE_MESSAGE, _OPT, value_type, None)])
    return file


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_build_file())


def _message(name: str) -> type:
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


XSpace = _message("XSpace")
XPlane = _message("XPlane")
XLine = _message("XLine")
XEvent = _message("XEvent")
XStat = _message("XStat")
XEventMetadata = _message("XEventMetadata")
XStatMetadata = _message("XStatMetadata")
