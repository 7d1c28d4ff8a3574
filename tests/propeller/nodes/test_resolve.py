"""Binding resolution: literals, promises (with aliases and attribute paths), collections and maps."""

from __future__ import annotations

import msgpack
import pytest
from flyteidl.core import literals_pb2, types_pb2
from google.protobuf import struct_pb2

from flytelite.propeller.nodes.resolve import BindingError, resolve_bindings
from flytelite.storage import BlobStore
from tests.propeller.harness import literal, python_value

OUTPUTS = {
    "start-node": literals_pb2.LiteralMap(literals={"x": literal(5)}),
    "n0": literals_pb2.LiteralMap(literals={
        "o0": literal(7),
        "d": literals_pb2.Literal(map=literals_pb2.LiteralMap(literals={"k": literal([10, 20, 30])})),
        "dc": literals_pb2.Literal(scalar=literals_pb2.Scalar(binary=literals_pb2.Binary(
            value=msgpack.packb({"a": {"b": [1.5, "two"]}, "xs": [1, 2]}), tag="msgpack"))),
        "gen": literals_pb2.Literal(scalar=literals_pb2.Scalar(generic=struct_pb2.Struct(
            fields={"inner": struct_pb2.Value(struct_value=struct_pb2.Struct(
                fields={"v": struct_pb2.Value(string_value="deep")}))}))),
    }),
}


def promise(node: str, var: str, *path) -> literals_pb2.BindingData:
    attrs = [types_pb2.PromiseAttribute(int_value=p) if isinstance(p, int) else types_pb2.PromiseAttribute(string_value=p)
             for p in path]
    return literals_pb2.BindingData(promise=types_pb2.OutputReference(node_id=node, var=var, attr_path=attrs))


def resolve(data: literals_pb2.BindingData, tmp_path, aliases=None):
    bindings = [literals_pb2.Binding(var="v", binding=data)]
    result = resolve_bindings("n1", bindings, lambda n: OUTPUTS[n], lambda n: (aliases or {}).get(n, {}),
                              BlobStore(str(tmp_path)))
    return result.literals["v"]


def test_scalars_promises_and_nesting(tmp_path):
    coll = literals_pb2.BindingData(collection=literals_pb2.BindingDataCollection(bindings=[
        promise("start-node", "x"), promise("", "x"),
        literals_pb2.BindingData(scalar=literal(1).scalar)]))
    nested = literals_pb2.BindingData(map=literals_pb2.BindingDataMap(bindings={"c": coll, "p": promise("n0", "o0")}))
    lit = resolve(nested, tmp_path)
    assert python_value(lit.map.literals["c"]) == [5, 5, 1]
    assert python_value(lit.map.literals["p"]) == 7


def test_output_alias_names_the_real_variable(tmp_path):
    lit = resolve(promise("n0", "renamed"), tmp_path, aliases={"n0": {"renamed": "o0"}})
    assert python_value(lit) == 7


@pytest.mark.parametrize("path, expected", [
    (("d", "k", 1), 20),
    (("dc", "a", "b", 0), 1.5),
    (("dc", "a", "b", 1), "two"),
    (("gen", "inner", "v"), "deep"),
])
def test_attribute_paths(tmp_path, path, expected):
    assert python_value(resolve(promise("n0", *path), tmp_path)) == expected


def test_attribute_path_to_a_list_inside_a_dataclass_gives_a_collection(tmp_path):
    lit = resolve(promise("n0", "dc", "xs"), tmp_path)
    assert [msgpack.unpackb(x.scalar.binary.value) for x in lit.collection.literals] == [1, 2]


@pytest.mark.parametrize("data, message", [
    (promise("n0", "nope"), "no output named 'nope'"),
    (promise("n0", "d", "missing"), "key 'missing' does not exist"),
    (promise("n0", "d", "k", 9), "index 9 is out of range"),
])
def test_errors_name_what_is_wrong(tmp_path, data, message):
    with pytest.raises(BindingError, match=message):
        resolve(data, tmp_path)
