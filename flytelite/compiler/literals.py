"""Types of values: infer a LiteralType from a Literal and check values against expected types.

Mirrors how Flyte validates literal bindings and execution inputs (propeller validators/utils.go
LiteralTypeForLiteral, admin's execution-input check): infer the value's type, then apply the same
castability rules as for promises. Collections and maps of mixed values infer a union; empty ones
infer NONE elements, which fit any collection/map.
"""

from __future__ import annotations

from flyteidl.core import literals_pb2, types_pb2

from flytelite.compiler.types import literal_type_castable

LiteralType = types_pb2.LiteralType
SimpleType = types_pb2.SimpleType

# flytekit tags msgpack-encoded dataclasses/dicts so they are typed as STRUCT, not raw bytes.
MESSAGEPACK = "msgpack"

_PRIMITIVE_TO_SIMPLE = {
    "integer": SimpleType.INTEGER,
    "float_value": SimpleType.FLOAT,
    "string_value": SimpleType.STRING,
    "boolean": SimpleType.BOOLEAN,
    "datetime": SimpleType.DATETIME,
    "duration": SimpleType.DURATION,
}


def _simple(s: types_pb2.SimpleType) -> LiteralType:
    return LiteralType(simple=s)


def _typed(kind: str, holder, field: str) -> LiteralType:
    """A LiteralType of ``kind`` copied from ``holder.field``.

    When the value does not say its type (field unset), Flyte ends up with a type of that kind
    whose details are missing, which no checker accepts; an unset LiteralType behaves the same.
    """
    if not holder.HasField(field):
        return LiteralType()
    out = LiteralType()
    getattr(out, kind).CopyFrom(getattr(holder, field))
    return out


def literal_type_for_primitive(p: literals_pb2.Primitive) -> LiteralType:
    return _simple(_PRIMITIVE_TO_SIMPLE.get(p.WhichOneof("value"), SimpleType.NONE))


def literal_type_for_scalar(scalar: literals_pb2.Scalar) -> LiteralType | None:
    """The type a scalar value carries, or None when it cannot be told (e.g. a blob without metadata)."""
    kind = scalar.WhichOneof("value")
    if kind == "primitive":
        return literal_type_for_primitive(scalar.primitive)
    if kind == "blob":
        if not scalar.blob.HasField("metadata"):
            return None
        return _typed("blob", scalar.blob.metadata, "type")
    if kind == "binary":
        return _simple(SimpleType.STRUCT if scalar.binary.tag == MESSAGEPACK else SimpleType.BINARY)
    if kind == "schema":
        return _typed("schema", scalar.schema, "type")
    if kind == "structured_dataset":
        sd = scalar.structured_dataset
        if not sd.HasField("metadata"):
            return LiteralType()
        return _typed("structured_dataset_type", sd.metadata, "structured_dataset_type")
    if kind == "none_type":
        return _simple(SimpleType.NONE)
    if kind == "error":
        return _simple(SimpleType.ERROR)
    if kind == "generic":
        return _simple(SimpleType.STRUCT)
    if kind == "union":
        # A union value knows the variant it was stored as: a one-variant union, which castability unwraps.
        t = LiteralType()
        t.union_type.variants.add().CopyFrom(scalar.union.type)
        return t
    return None


def _type_for_literals(literals: list[literals_pb2.Literal]) -> LiteralType | None:
    inner: list[LiteralType] = []
    seen: set[bytes] = set()
    none_type: LiteralType | None = None
    for lit in literals:
        t = literal_type_for_literal(lit)
        if lit.WhichOneof("value") == "collection" and len(lit.collection.literals) == 0:
            none_type = t
            continue
        if t is None:
            # An element of unknown type makes the whole container's type unknown.
            return None
        key = t.SerializeToString(deterministic=True)
        if key not in seen:
            seen.add(key)
            inner.append(t)
    if not inner and none_type is not None:
        inner.append(none_type)
    if not inner:
        return _simple(SimpleType.NONE)
    if len(inner) == 1:
        return inner[0]
    inner.sort(key=lambda t: str(t))
    return _multiple_type_union(inner)


def _multiple_type_union(types: list[LiteralType]) -> LiteralType:
    # Lists of unions are flattened into one list-of-union, as Flyte does for nested heterogeneous lists.
    variants: list[LiteralType] = []
    nested = False
    for t in types:
        if t.WhichOneof("type") == "collection_type" and t.collection_type.WhichOneof("type") == "union_type":
            nested = True
            variants.extend(t.collection_type.union_type.variants)
        else:
            variants.append(t)
    union = LiteralType()
    union.union_type.variants.extend(variants)
    if nested:
        return LiteralType(collection_type=union)
    return union


def literal_type_for_literal(lit: literals_pb2.Literal) -> LiteralType | None:
    """Infer the LiteralType of a value (Flyte's LiteralTypeForLiteral); None if unknown."""
    kind = lit.WhichOneof("value")
    if kind == "scalar":
        return literal_type_for_scalar(lit.scalar)
    if kind == "collection":
        inner = _type_for_literals(list(lit.collection.literals))
        return None if inner is None else LiteralType(collection_type=inner)
    if kind == "map":
        inner = _type_for_literals(list(lit.map.literals.values()))
        return None if inner is None else LiteralType(map_value_type=inner)
    if kind == "offloaded_metadata":
        return lit.offloaded_metadata.inferred_type
    return None


def literal_type_is_valid(t: LiteralType | None) -> bool:
    """Flyte's ValidateLiteralType: the type (and its element types) must be known."""
    while t is not None:
        kind = t.WhichOneof("type")
        if kind == "collection_type":
            t = t.collection_type
        elif kind == "map_value_type":
            t = t.map_value_type
        else:
            return True
    return False


def literal_matches_type(literal: literals_pb2.Literal, t: LiteralType) -> bool:
    """May ``literal`` be passed where type ``t`` is expected (e.g. an execution input)?"""
    inferred = literal_type_for_literal(literal)
    if inferred is None or not literal_type_is_valid(inferred):
        return False
    return literal_type_castable(inferred, t)
