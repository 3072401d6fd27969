"""JSON-ish Python values ⇄ google.protobuf.Struct.

Struct stores every number as a double; tool results and summaries carry
counts and lengths, so integral doubles are turned back into ints on the way out
(JSON `42`, not `42.0`, as upstream sends).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2


def to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def from_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    return {key: _from_value(v) for key, v in struct.fields.items()}


def _from_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return from_struct(value.struct_value)
    if kind == "list_value":
        return [_from_value(v) for v in value.list_value.values]
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None
