"""Table tests for Flyte's type-compatibility rules (literal_type_castable) and value checks."""

from __future__ import annotations

import pytest
from flyteidl.core import literals_pb2, types_pb2

from flytelite.compiler import literal_matches_type, literal_type_castable
from tests.compiler.helpers import (
    BOOL,
    DATETIME,
    DURATION,
    FLOAT,
    INT,
    NONE,
    STR,
    STRUCT,
    blob,
    dct,
    enum,
    lit_float,
    lit_int,
    lit_list,
    lit_map,
    lit_none,
    lit_str,
    lst,
    schema,
    sd,
    tagged,
    union,
    with_metadata,
)

# flytekit-style JSON schemas (draft 2020-12) for dataclasses A(a: int), B(A)(b: Optional[str]),
# and two unrelated nested ones, B2(b: A) vs D(d: C(c: str)).
SCHEMA_A = {"title": "A", "type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
SCHEMA_B = {
    "title": "B",
    "type": "object",
    "required": ["a", "b"],
    "properties": {
        "a": {"type": "integer"},
        "b": {"default": None, "anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}
SCHEMA_B2 = {"title": "B", "type": "object", "required": ["b"], "properties": {"b": SCHEMA_A}}
SCHEMA_D = {
    "title": "D",
    "type": "object",
    "required": ["d"],
    "properties": {
        "d": {"title": "C", "type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}}
    },
}
SCHEMA_REF = {
    "type": "object",
    "required": ["b"],
    "properties": {"b": {"$ref": "#/$defs/A"}},
    "$defs": {"A": SCHEMA_A},
}


def annotated(t):
    out = types_pb2.LiteralType()
    out.CopyFrom(t)
    out.annotation.annotations.update({"cache": "x"})
    return out


# (case id, upstream, downstream, castable)
CASTABLE = [
    ("int-int", INT, INT, True),
    ("metadata-ignored", with_metadata(INT, {"k": "v"}), INT, True),
    ("annotation-ignored", annotated(INT), INT, True),
    ("enum-to-string", enum("a", "b"), STR, True),
    ("string-to-enum", STR, enum("a", "b"), True),
    ("enum-to-same-enum", enum("a", "b"), enum("a", "b"), True),
    ("list-int", lst(INT), lst(INT), True),
    ("empty-list-to-list", lst(NONE), lst(INT), True),
    ("nested-list", lst(lst(INT)), lst(lst(INT)), True),
    ("map-int", dct(INT), dct(INT), True),
    ("empty-map-to-map", dct(NONE), dct(FLOAT), True),
    ("blob-csv-to-generic", blob("csv"), blob(""), True),
    ("blob-generic-to-csv", blob(""), blob("csv"), True),
    ("blob-same-format", blob("csv"), blob("csv"), True),
    ("blob-dimensionality-ignored", blob("csv", multipart=True), blob("csv"), True),
    ("schema-generic", schema(), schema(), True),
    ("schema-generic-to-typed", schema(), schema(a="INTEGER"), True),
    ("schema-typed-to-generic", schema(a="INTEGER"), schema(), True),
    ("schema-superset-to-subset", schema(a="INTEGER", b="FLOAT"), schema(a="INTEGER"), True),
    ("sd-generic-to-schema", sd(), schema(a="INTEGER"), True),
    ("schema-to-sd-generic", schema(a="INTEGER"), sd(), True),
    ("sd-superset-to-schema", sd(a=INT, b=FLOAT), schema(a="INTEGER"), True),
    ("sd-generic", sd(), sd(), True),
    ("sd-generic-to-typed", sd(), sd(a=INT, b=lst(INT)), True),
    ("sd-typed-to-generic", sd(a=INT, b=lst(INT)), sd(), True),
    ("sd-superset-to-subset", sd(a=INT, b=lst(INT), c=dct(INT)), sd(a=INT, b=lst(INT)), True),
    ("schema-to-sd-same-columns", schema(a="INTEGER"), sd(a=INT), True),
    ("sd-format-to-empty", sd("parquet"), sd(""), True),
    ("sd-empty-to-format", sd(""), sd("parquet"), True),
    ("sd-format-case-insensitive", sd("PARQUET"), sd("parquet"), True),
    ("sd-nullable", NONE, sd(), True),
    ("none-none", NONE, NONE, True),
    ("str-to-union-unambiguous", STR, union(STR, INT), True),
    ("union-to-superset-union", union(INT, STR), union(STR, INT, FLOAT), True),
    ("singular-union-unwrapped", union(INT), INT, True),
    ("int-to-optional", INT, union(INT, NONE), True),
    ("none-to-optional", NONE, union(INT, NONE), True),
    ("struct-without-schema", STRUCT, with_metadata(STRUCT, SCHEMA_A), True),
    ("struct-same-schema", with_metadata(STRUCT, SCHEMA_A), with_metadata(STRUCT, SCHEMA_A), True),
    ("struct-child-to-parent", with_metadata(STRUCT, SCHEMA_B), with_metadata(STRUCT, SCHEMA_A), True),
    ("struct-ref-resolved", with_metadata(STRUCT, SCHEMA_REF), with_metadata(STRUCT, SCHEMA_B2), True),
    ("tag-selects-one-variant", tagged(INT, "a"), union(tagged(INT, "a"), tagged(INT, "b")), True),
    ("list-to-union-of-list", lst(INT), union(lst(INT), STR), True),
    ("tagged-union-to-same", union(tagged(INT, "i"), tagged(STR, "s")), union(tagged(INT, "i"), tagged(STR, "s")), True),
    # --- negatives ---
    ("int-to-float", INT, FLOAT, False),
    ("float-to-int", FLOAT, INT, False),
    ("none-to-int", NONE, INT, False),
    ("str-to-int", STR, INT, False),
    ("bool-to-int", BOOL, INT, False),
    ("datetime-to-duration", DATETIME, DURATION, False),
    ("enum-to-int", enum("a"), INT, False),
    ("enum-to-other-enum", enum("a", "b"), enum("a", "c"), False),
    ("int-to-none", INT, NONE, False),
    ("list-int-to-list-float", lst(INT), lst(FLOAT), False),
    ("list-to-scalar", lst(INT), INT, False),
    ("list-to-nested-list", lst(INT), lst(lst(INT)), False),
    ("none-to-list", NONE, lst(INT), False),
    ("empty-list-to-scalar", lst(NONE), INT, False),
    ("map-int-to-map-float", dct(INT), dct(FLOAT), False),
    ("map-to-scalar", dct(INT), INT, False),
    ("map-to-nested-map", dct(INT), dct(dct(INT)), False),
    ("list-to-map", lst(INT), dct(INT), False),
    ("blob-format-mismatch", blob("csv"), blob("pdf"), False),
    ("none-to-blob", NONE, blob(), False),
    ("int-to-blob", INT, blob(), False),
    ("schema-subset-to-superset", schema(a="INTEGER"), schema(a="INTEGER", b="FLOAT"), False),
    ("schema-column-type-mismatch", schema(a="INTEGER"), schema(a="FLOAT"), False),
    ("schema-column-type-mismatch-flipped", schema(a="FLOAT"), schema(a="INTEGER"), False),
    ("none-to-schema", NONE, schema(), False),
    ("sd-subset-to-superset", sd(a=INT, b=lst(INT)), sd(a=INT, b=lst(INT), c=dct(INT)), False),
    ("schema-to-sd-column-mismatch", schema(a="INTEGER"), sd(a=FLOAT), False),
    ("sd-column-mismatch", sd(a=INT, b=lst(INT)), sd(a=FLOAT), False),
    ("sd-column-mismatch-flipped", sd(a=FLOAT), sd(a=INT, b=lst(INT)), False),
    ("sd-format-mismatch", sd("csv"), sd("parquet"), False),
    ("schema-to-non-parquet-sd", schema(), sd("csv"), False),
    ("non-parquet-sd-to-schema", sd("csv"), schema(), False),
    ("str-to-ambiguous-union", STR, union(STR, STR), False),
    ("union-variant-without-home", union(INT, STR), union(INT, FLOAT), False),
    ("union-tag-mismatch", union(tagged(INT, "a"), STR), union(tagged(INT, "b"), STR), False),
    ("int-to-union-without-int", INT, union(STR, FLOAT), False),
    ("union-to-scalar", union(INT, STR), INT, False),
    ("singular-union-wrong-type", union(INT), FLOAT, False),
    ("optional-to-required", union(INT, NONE), INT, False),
    ("struct-parent-to-child", with_metadata(STRUCT, SCHEMA_A), with_metadata(STRUCT, SCHEMA_B), False),
    ("struct-unrelated", with_metadata(STRUCT, SCHEMA_B2), with_metadata(STRUCT, SCHEMA_D), False),
    ("tag-mismatch", tagged(INT, "a"), tagged(INT, "b"), False),
    ("tagged-to-untagged-ok-but-type-differs", tagged(INT, "a"), FLOAT, False),
    ("struct-to-int", STRUCT, INT, False),
]


@pytest.mark.parametrize(
    "upstream,downstream,expected", [c[1:] for c in CASTABLE], ids=[c[0] for c in CASTABLE]
)
def test_castable(upstream, downstream, expected) -> None:
    assert literal_type_castable(upstream, downstream) is expected


def test_table_size() -> None:
    negatives = sum(1 for c in CASTABLE if not c[3])
    assert len(CASTABLE) >= 60 and negatives >= len(CASTABLE) / 2


def _msgpack() -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(binary=literals_pb2.Binary(value=b"\x80", tag="msgpack")))


def _union_literal(value: literals_pb2.Literal, t) -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(union=literals_pb2.Union(value=value, type=t)))


def _blob_without_metadata() -> literals_pb2.Literal:
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(blob=literals_pb2.Blob(uri="s3://x")))


MATCHES = [
    ("int-int", lit_int(1), INT, True),
    ("str-str", lit_str("x"), STR, True),
    ("int-not-str", lit_int(1), STR, False),
    ("str-not-int", lit_str("1"), INT, False),
    ("int-not-float", lit_int(1), FLOAT, False),
    ("float-float", lit_float(1.5), FLOAT, True),
    ("str-to-enum", lit_str("a"), enum("a", "b"), True),
    ("list-of-int", lit_list(lit_int(1), lit_int(2)), lst(INT), True),
    ("empty-list", lit_list(), lst(STR), True),
    ("mixed-list-not-int-list", lit_list(lit_int(1), lit_str("a")), lst(INT), False),
    ("mixed-list-to-union-list", lit_list(lit_int(1), lit_str("a")), lst(union(INT, STR)), True),
    ("map-of-str", lit_map(a=lit_str("x")), dct(STR), True),
    ("map-not-list", lit_map(a=lit_str("x")), lst(STR), False),
    ("none-to-optional", lit_none(), union(INT, NONE), True),
    ("none-not-int", lit_none(), INT, False),
    ("int-to-optional", lit_int(3), union(INT, NONE), True),
    ("union-literal", _union_literal(lit_int(3), INT), union(INT, STR), True),
    ("union-literal-wrong-variant", _union_literal(lit_int(3), INT), union(FLOAT, STR), False),
    ("msgpack-is-struct", _msgpack(), STRUCT, True),
    ("msgpack-not-str", _msgpack(), STR, False),
    ("blob-without-metadata", _blob_without_metadata(), blob(), False),
    ("empty-literal", literals_pb2.Literal(), INT, False),
]


@pytest.mark.parametrize("literal,t,expected", [c[1:] for c in MATCHES], ids=[c[0] for c in MATCHES])
def test_literal_matches_type(literal, t, expected) -> None:
    assert literal_matches_type(literal, t) is expected
