"""The XSpace wire schema, declared here so that reading a capture needs only ``protobuf``.

Contract: ``XSpace``, ``XPlane``, ``XLine``, ``XEvent``, ``XStat``, ``XEventMetadata`` and
``XStatMetadata`` are protobuf message classes wire-compatible with the profiler's
``xplane.proto`` (the file format of ``*.xplane.pb``). Field numbers are the compatibility
contract; names are ours. Unknown fields in newer captures are kept by protobuf and ignored.

The schema is built from descriptors at import time (``protos``), so no generated ``*_pb2.py``
and no ``protoc`` are needed.
"""
from __future__ import annotations

from xlaprof.xspace.protos import FIELD as _T
from xlaprof.xspace.protos import Message, message_classes

_PACKAGE = "xlaprof.xspace"

# (field name, number, type, label, message type name or None, oneof index or None)
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


def _messages() -> dict[str, Message]:
    messages = {name: Message(fields, tuple(oneofs)) for name, (oneofs, fields) in _MESSAGES.items()}
    entries = {entry: Message([("key", 1, _T.TYPE_INT64, _OPT, None), ("value", 2, _T.TYPE_MESSAGE, _OPT, value)],
                              map_entry=True) for entry, value in _MAP_ENTRIES.items()}
    messages["XPlane"] = Message(messages["XPlane"].fields, nested=entries)
    return messages


# In the order of _MESSAGES.
XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata = message_classes(
    "xlaprof/xspace.proto", _PACKAGE, _messages()).values()
