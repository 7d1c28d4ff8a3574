"""Type compatibility: may a value of one LiteralType flow into a place that expects another?

This is Flyte's AreTypesCastable (flytepropeller validators/typing.go) rule for rule: one checker per
kind of *downstream* type, exact matching for simple types (ignoring metadata, annotations and
structure), enum<->string, structure tags, STRUCT JSON schemas, NONE, collections and maps (an
empty upstream collection/map matches any), blobs, schemas and structured datasets (formats and
column subsets, schema interop), and unions. ``type_to_str`` renders types for error messages.
"""

from __future__ import annotations

from typing import Any, Literal, overload

from flyteidl.core import types_pb2

from flytelite.compiler.jsonschema import is_same_schema, is_sub_schema

LiteralType = types_pb2.LiteralType
SimpleType = types_pb2.SimpleType
_NONE = SimpleType.NONE
_STRING = SimpleType.STRING
_STRUCT = SimpleType.STRUCT


def _kind(t: LiteralType | None) -> str | None:
    return None if t is None else t.WhichOneof("type")


@overload
def _sub(t: LiteralType, field: Literal["collection_type", "map_value_type"]) -> LiteralType | None: ...
@overload
def _sub(t: LiteralType, field: Literal["union_type"]) -> types_pb2.UnionType | None: ...
@overload
def _sub(t: LiteralType, field: Literal["blob"]) -> types_pb2.BlobType | None: ...
@overload
def _sub(t: LiteralType, field: Literal["schema"]) -> types_pb2.SchemaType | None: ...
@overload
def _sub(t: LiteralType, field: Literal["structured_dataset_type"]) -> types_pb2.StructuredDatasetType | None: ...


def _sub(t: LiteralType, field: str) -> Any:
    """The typed sub-message if ``t`` is of that kind, else None (Go's nil-safe getters)."""
    return getattr(t, field) if _kind(t) == field else None


def is_none_type(t: LiteralType | None) -> bool:
    return t is not None and _kind(t) == "simple" and t.simple == _NONE


def _simple(t: LiteralType | None) -> int | None:
    return t.simple if t is not None and _kind(t) == "simple" else None


def type_tag(t: LiteralType | None) -> str:
    if t is None or not t.HasField("structure"):
        return ""
    return t.structure.tag


def literal_type_castable(upstream: LiteralType, downstream: LiteralType) -> bool:
    """Flyte's AreTypesCastable: can a value of ``upstream`` type be bound to a ``downstream`` input?"""
    # A single-variant union upstream is as good as its only variant.
    up_union = _sub(upstream, "union_type")
    if up_union is not None and len(up_union.variants) == 1:
        if _casts_from(downstream, up_union.variants[0]):
            return True
    return _casts_from(downstream, upstream)


def _casts_from(downstream: LiteralType, upstream: LiteralType) -> bool:
    kind = _kind(downstream)
    if kind == "collection_type":
        up = _sub(upstream, "collection_type")
        if is_none_type(up):  # an empty list (typed list-of-none) fits any list
            return True
        return up is not None and _casts_from(downstream.collection_type, up)
    if kind == "map_value_type":
        up = _sub(upstream, "map_value_type")
        if is_none_type(up):
            return True
        return up is not None and _casts_from(downstream.map_value_type, up)
    if kind == "blob":
        up_blob = _sub(upstream, "blob")
        if up_blob is None:
            return False
        # A blob without a format is generic and accepts (or is accepted by) any blob.
        return up_blob.format == "" or downstream.blob.format == "" or up_blob.format == downstream.blob.format
    if kind == "schema":
        return _schema_casts_from(downstream.schema, upstream)
    if kind == "union_type":
        return _union_casts_from(downstream.union_type, upstream)
    if kind == "structured_dataset_type":
        return _sd_casts_from(downstream.structured_dataset_type, upstream)
    if is_none_type(downstream):
        return is_none_type(upstream)
    return _trivial_casts_from(downstream, upstream)


def _trivial_casts_from(downstream: LiteralType, upstream: LiteralType) -> bool:
    # Enums are constrained strings: they convert both ways (a bad string fails at run time).
    if _kind(upstream) == "enum_type" and _simple(downstream) == _STRING:
        return True
    if _kind(downstream) == "enum_type" and _simple(upstream) == _STRING:
        return True
    up_tag = type_tag(upstream)
    if up_tag != "" and type_tag(downstream) != up_tag:
        return False
    if _simple(upstream) == _STRUCT and _simple(downstream) == _STRUCT:
        # Dataclasses/pydantic models carry a JSON schema in metadata; old flytekit omitted it, and
        # types without one must keep working (reference tasks), so they match any struct.
        if not upstream.HasField("metadata") or not downstream.HasField("metadata"):
            return True
        return is_same_schema(upstream.metadata, downstream.metadata) or is_sub_schema(
            upstream.metadata, downstream.metadata
        )
    return _strip(upstream) == _strip(downstream)


def _strip(t: LiteralType) -> LiteralType:
    """The type without the fields Flyte ignores when comparing (metadata, annotation, structure)."""
    c = LiteralType()
    c.CopyFrom(t)
    for f in ("metadata", "annotation", "structure"):
        c.ClearField(f)
    return c


def _union_casts_from(union: types_pb2.UnionType, upstream: LiteralType) -> bool:
    up_union = _sub(upstream, "union_type")
    if up_union is not None:
        # Every upstream variant needs a home downstream.
        return all(any(literal_type_castable(u, d) for d in union.variants) for u in up_union.variants)
    # A plain value must select exactly one variant; two candidates are ambiguous.
    matches = 0
    for variant in union.variants:
        if literal_type_castable(upstream, variant):
            matches += 1
            if matches > 1:
                return False
    return matches == 1


_SCHEMA_COL = types_pb2.SchemaType.SchemaColumn.SchemaColumnType
_SCHEMA_TO_SIMPLE: dict[int, int] = {
    _SCHEMA_COL.INTEGER: SimpleType.INTEGER,
    _SCHEMA_COL.FLOAT: SimpleType.FLOAT,
    _SCHEMA_COL.STRING: SimpleType.STRING,
    _SCHEMA_COL.BOOLEAN: SimpleType.BOOLEAN,
    _SCHEMA_COL.DATETIME: SimpleType.DATETIME,
    _SCHEMA_COL.DURATION: SimpleType.DURATION,
}


def _schema_col_matches(col_type: int, simple: int | None) -> bool:
    return col_type in _SCHEMA_TO_SIMPLE and _SCHEMA_TO_SIMPLE[col_type] == simple


def _schema_casts_from(schema: types_pb2.SchemaType, upstream: LiteralType) -> bool:
    up_schema = _sub(upstream, "schema")
    up_sd = _sub(upstream, "structured_dataset_type")
    if up_schema is not None:
        if not up_schema.columns or not schema.columns:
            return True
        have = {c.name: c.type for c in up_schema.columns}
        # The downstream columns must be a subset of the upstream ones, with identical types.
        return all(c.name in have and have[c.name] == c.type for c in schema.columns)
    if up_sd is None:
        return False
    # A FlyteSchema is always parquet.
    if up_sd.format and up_sd.format.lower() != "parquet":
        return False
    if not up_sd.columns or not schema.columns:
        return True
    have_sd = {c.name: _simple(c.literal_type) for c in up_sd.columns}
    return all(c.name in have_sd and _schema_col_matches(c.type, have_sd[c.name]) for c in schema.columns)


def _sd_casts_from(sd: types_pb2.StructuredDatasetType, upstream: LiteralType) -> bool:
    if is_none_type(upstream):  # structured datasets are nullable
        return True
    up_schema = _sub(upstream, "schema")
    up_sd = _sub(upstream, "structured_dataset_type")
    if up_schema is not None:
        if sd.format and sd.format.lower() != "parquet":
            return False
        if not up_schema.columns or not sd.columns:
            return True
        have = {c.name: c.type for c in up_schema.columns}
        return all(
            c.name in have and _schema_col_matches(have[c.name], _simple(c.literal_type)) for c in sd.columns
        )
    if up_sd is None:
        return False
    # An empty format means "any format" on either side.
    if up_sd.format and sd.format and up_sd.format.lower() != sd.format.lower():
        return False
    if not up_sd.columns or not sd.columns:
        return True
    have_sd = {c.name: c.literal_type for c in up_sd.columns}
    return all(c.name in have_sd and _casts_from(c.literal_type, have_sd[c.name]) for c in sd.columns)


def is_optional(t: LiteralType | None) -> bool:
    """True for a union that has a NONE variant: such an input may be left unbound."""
    union = _sub(t, "union_type") if t is not None else None
    return union is not None and any(_simple(v) == _NONE for v in union.variants)


def type_to_str(t: LiteralType | None) -> str:
    """A short, Python-flavoured rendering of a type for messages, e.g. ``List[INTEGER]``."""
    if t is None:
        return "None"
    kind = _kind(t)
    tag = type_tag(t)
    suffix = f" (tag {tag})" if tag else ""
    if kind == "simple":
        name = SimpleType.Name(t.simple)
        if t.simple == _STRUCT and t.HasField("structure") and t.structure.dataclass_type:
            fields = ", ".join(f"{k}: {type_to_str(v)}" for k, v in sorted(t.structure.dataclass_type.items()))
            return f"STRUCT{{{fields}}}{suffix}"
        return name + suffix
    if kind == "collection_type":
        return f"List[{type_to_str(t.collection_type)}]{suffix}"
    if kind == "map_value_type":
        return f"Dict[str, {type_to_str(t.map_value_type)}]{suffix}"
    if kind == "union_type":
        return f"Union[{', '.join(type_to_str(v) for v in t.union_type.variants)}]{suffix}"
    if kind == "enum_type":
        return f"Enum[{', '.join(t.enum_type.values)}]{suffix}"
    if kind == "blob":
        dim = types_pb2.BlobType.BlobDimensionality.Name(t.blob.dimensionality)
        return f"Blob(format={t.blob.format!r}, {dim}){suffix}"
    if kind == "schema":
        cols = ", ".join(
            f"{c.name}: {types_pb2.SchemaType.SchemaColumn.SchemaColumnType.Name(c.type)}" for c in t.schema.columns
        )
        return f"Schema({cols}){suffix}"
    if kind == "structured_dataset_type":
        sd = t.structured_dataset_type
        cols = ", ".join(f"{c.name}: {type_to_str(c.literal_type)}" for c in sd.columns)
        return f"StructuredDataset(format={sd.format!r}, columns=[{cols}]){suffix}"
    return "<unset type>"
