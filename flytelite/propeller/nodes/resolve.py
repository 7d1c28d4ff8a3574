"""Resolving a node's input bindings into a LiteralMap (FlytePropeller's resolve.go and attr_path_resolver.go).

A binding is a literal scalar, a promise of an upstream node's output (optionally with an attribute
path into it), or a collection / map of bindings. Upstream outputs come from a callable, so this
module does no I/O of its own except reading offloaded literals an attribute path walks into.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgpack
from flyteidl.core import literals_pb2, types_pb2
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from flytelite.idl.ids import START_NODE
from flytelite.storage import BlobStore

MESSAGEPACK = "msgpack"

# node id -> that node's outputs (raises BindingError when they cannot be read).
OutputReader = Callable[[str], literals_pb2.LiteralMap]


class BindingError(Exception):
    """A binding cannot be resolved; the message names the node, variable and what is wrong."""


def resolve_bindings(
    node_id: str,
    bindings: Iterable[literals_pb2.Binding],
    outputs_of: OutputReader,
    aliases: Callable[[str], dict[str, str]],
    blobs: BlobStore,
) -> literals_pb2.LiteralMap:
    """The LiteralMap of a node's inputs; aliases(node_id) maps output aliases to variable names."""
    result = literals_pb2.LiteralMap()
    for binding in bindings:
        try:
            literal = _resolve(binding.binding, outputs_of, aliases, blobs)
        except BindingError as e:
            raise BindingError(f"cannot bind input {binding.var!r} of node {node_id}: {e}") from None
        result.literals[binding.var].CopyFrom(literal)
    return result


def _resolve(data: literals_pb2.BindingData, outputs_of: OutputReader, aliases, blobs) -> literals_pb2.Literal:
    kind = data.WhichOneof("value")
    if kind == "scalar":
        return literals_pb2.Literal(scalar=data.scalar)
    if kind == "collection":
        coll = literals_pb2.LiteralCollection(
            literals=[_resolve(b, outputs_of, aliases, blobs) for b in data.collection.bindings]
        )
        return literals_pb2.Literal(collection=coll)
    if kind == "map":
        lmap = literals_pb2.LiteralMap()
        for key, b in data.map.bindings.items():
            lmap.literals[key].CopyFrom(_resolve(b, outputs_of, aliases, blobs))
        return literals_pb2.Literal(map=lmap)
    if kind == "promise":
        return _resolve_promise(data.promise, outputs_of, aliases, blobs)
    if kind == "offloaded_metadata":
        return literals_pb2.Literal(offloaded_metadata=data.offloaded_metadata)
    raise BindingError(f"binding has no value (kind {kind!r})")


def _resolve_promise(promise, outputs_of: OutputReader, aliases, blobs) -> literals_pb2.Literal:
    node_id = promise.node_id or START_NODE
    var = aliases(node_id).get(promise.var, promise.var)
    outputs = outputs_of(node_id)
    if var not in outputs.literals:
        raise BindingError(f"node {node_id} produced no output named {var!r} (it has {sorted(outputs.literals)})")
    literal = outputs.literals[var]
    if len(promise.attr_path):
        literal = resolve_attr_path(literal, list(promise.attr_path), blobs)
    return literal


def resolve_attr_path(
    literal: literals_pb2.Literal, path: list[types_pb2.PromiseAttribute], blobs: BlobStore
) -> literals_pb2.Literal:
    """Walk `promise.a["b"][0]`: through literal maps and collections, then into a dataclass value."""
    current, index = literal, 0
    while index < len(path):
        if current.HasField("offloaded_metadata"):
            current = blobs.read_proto(current.offloaded_metadata.uri, literals_pb2.Literal)
        attr = path[index]
        if current.HasField("map"):
            key = attr.string_value
            if key not in current.map.literals:
                raise BindingError(f"key {key!r} does not exist in {sorted(current.map.literals)}")
            current = current.map.literals[key]
        elif current.HasField("collection"):
            items = current.collection.literals
            if not 0 <= attr.int_value < len(items):
                raise BindingError(f"index {attr.int_value} is out of range of a list of {len(items)}")
            current = items[attr.int_value]
        else:
            break
        index += 1
    rest = path[index:]
    if not rest or not current.HasField("scalar"):
        return current
    if current.scalar.HasField("binary"):
        return _attr_in_binary(current.scalar.binary, rest)
    if current.scalar.HasField("generic"):
        return _to_literal(_walk(MessageToDict(current.scalar.generic), rest))
    raise BindingError(f"cannot follow attribute path into a {current.scalar.WhichOneof('value')} value")


def _walk(value, attrs):
    for attr in attrs:
        if isinstance(value, dict):
            key = attr.string_value
            if key not in value:
                raise BindingError(f"key {key!r} does not exist in {sorted(value)}")
            value = value[key]
        elif isinstance(value, list):
            if attr.WhichOneof("value") != "int_value" or not 0 <= attr.int_value < len(value):
                raise BindingError(f"index {attr.int_value} is out of range of a list of {len(value)}")
            value = value[attr.int_value]
        else:
            raise BindingError(f"cannot index into a value of type {type(value).__name__}")
    return value


def _attr_in_binary(binary: literals_pb2.Binary, attrs) -> literals_pb2.Literal:
    if binary.tag != MESSAGEPACK:
        raise BindingError(f"unsupported serialization format {binary.tag!r} for an attribute path")
    value = _walk(msgpack.unpackb(binary.value, strict_map_key=False), attrs)
    if isinstance(value, list):
        return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(
            literals=[_binary_literal(v) for v in value]))
    primitive = _primitive(value)
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=primitive)) if primitive else _binary_literal(value)


def _binary_literal(value) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(
        binary=literals_pb2.Binary(value=msgpack.packb(value), tag=MESSAGEPACK)))


def _primitive(value) -> literals_pb2.Primitive | None:
    if isinstance(value, bool):
        return literals_pb2.Primitive(boolean=value)
    if isinstance(value, int):
        return literals_pb2.Primitive(integer=value)
    if isinstance(value, float):
        return literals_pb2.Primitive(float_value=value)
    if isinstance(value, str):
        return literals_pb2.Primitive(string_value=value)
    return None


def _to_literal(value) -> literals_pb2.Literal:
    """A value from a generic (protobuf Struct) dataclass, as Flyte converts it back to a literal."""
    if isinstance(value, dict):
        return literals_pb2.Literal(scalar=literals_pb2.Scalar(generic=ParseDict(value, struct_pb2.Struct())))
    if isinstance(value, list):
        return literals_pb2.Literal(collection=literals_pb2.LiteralCollection(literals=[_to_literal(v) for v in value]))
    primitive = _primitive(value)
    if primitive is None:
        raise BindingError(f"cannot convert {value!r} to a literal")
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(primitive=primitive))
