"""An array node's data: how many items its inputs make, and its items' outputs gathered into lists.

Mirrors FlytePropeller's ArrayNode: every list input not named in bound_inputs is mapped over
(all must have one length); everything else reaches every item whole. Outputs are one list per
output variable, in item order, with a None literal for every item that did not succeed.
"""

from __future__ import annotations

from collections.abc import Callable

from flyteidl.core import literals_pb2

from flytelite.propeller.phases import NodeStatusPhase

NONE_LITERAL = literals_pb2.Literal(scalar=literals_pb2.Scalar(none_type=literals_pb2.Void()))


class ArrayInputError(ValueError):
    """The array node's inputs cannot be mapped over (a user error)."""


def load_inputs(blobs, uri: str) -> literals_pb2.LiteralMap:
    """The array node's inputs, offloaded literals replaced by what they hold (propeller needs the lists)."""
    inputs = blobs.read_proto_if_exists(uri, literals_pb2.LiteralMap)
    if inputs is None:
        raise FileNotFoundError(f"the array node's inputs are missing at {uri}")
    for name, lit in inputs.literals.items():
        if lit.HasField("offloaded_metadata"):
            inputs.literals[name].CopyFrom(blobs.read_proto(lit.offloaded_metadata.uri, literals_pb2.Literal))
    return inputs


def array_size(inputs: literals_pb2.LiteralMap, bound: frozenset[str]) -> int:
    """The number of items: the common length of the mapped list inputs."""
    size: int | None = None
    for name in sorted(inputs.literals):
        lit = inputs.literals[name]
        if name in bound or not lit.HasField("collection"):
            continue
        length = len(lit.collection.literals)
        if size is None:
            size = length
        elif length != size:
            raise ArrayInputError(f"input arrays have different lengths: expecting {size} values, input {name!r} "
                                  f"has {length}")
    if size is None:
        if len(inputs.literals) and all(name in bound for name in inputs.literals):
            return 1
        raise ArrayInputError("no input array provided: a map task needs at least one list input to map over")
    return size


def gather_outputs(output_names: list[str], size: int, item_phase: Callable[[int], int],
                   read_outputs: Callable[[int], literals_pb2.LiteralMap]) -> literals_pb2.LiteralMap:
    """One list per output, item i's value at position i (None for an item that did not succeed)."""
    gathered = literals_pb2.LiteralMap()
    lists = {name: gathered.literals[name].collection.literals for name in output_names}
    for name in output_names:
        gathered.literals[name].collection.SetInParent()
    for i in range(size):
        if item_phase(i) != NodeStatusPhase.SUCCEEDED:
            for values in lists.values():
                values.add().CopyFrom(NONE_LITERAL)
            continue
        outputs = read_outputs(i)
        for name, values in lists.items():
            if name not in outputs.literals:
                raise ArrayInputError(f"item {i} succeeded but its outputs.pb has no output {name!r}")
            values.add().CopyFrom(outputs.literals[name])
    return gathered
