"""Protobuf message classes from a declaration written in Python: readers need only ``protobuf``.

Contract: ``message_classes(file_name, package, messages)`` builds a descriptor file from
``messages`` ({name: ``Message``}) in a pool of its own and returns {name: message class} for
every top-level message. A ``Message`` lists its fields as tuples ``(name, number, type, label,
message type name or None[, oneof index])`` (types and labels are
``descriptor_pb2.FieldDescriptorProto`` constants; message type names are relative to the
package, e.g. "XPlane.EventMetadataEntry"), its oneofs, and nested messages (``map_entry=True``
for the entry type of a protobuf map). The field numbers are what makes the classes
wire-compatible with the protos they mirror; no generated ``*_pb2.py`` and no ``protoc``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELD = descriptor_pb2.FieldDescriptorProto


@dataclass(frozen=True)
class Message:
    fields: list[tuple]
    oneofs: tuple[str, ...] = ()
    nested: dict[str, Message] = field(default_factory=dict)
    map_entry: bool = False


def _declare(target: descriptor_pb2.DescriptorProto, package: str, message: Message) -> None:
    for oneof in message.oneofs:
        target.oneof_decl.add(name=oneof)
    for name, number, ftype, label, type_name, *oneof in message.fields:
        added = target.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            added.type_name = f".{package}.{type_name}"
        if oneof and oneof[0] is not None:
            added.oneof_index = oneof[0]
    for name, nested in message.nested.items():
        inner = target.nested_type.add(name=name)
        _declare(inner, package, nested)
        if nested.map_entry:
            inner.options.map_entry = True


def message_classes(file_name: str, package: str, messages: dict[str, Message]) -> dict[str, type]:
    file = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    for name, message in messages.items():
        _declare(file.message_type.add(name=name), package, message)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
            for name in messages}
