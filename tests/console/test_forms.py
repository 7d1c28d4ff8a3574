"""Form text -> Literal by LiteralType (what the launch form and signal forms send), table-style."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgpack
import pytest
from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T

from flytelite.compiler import literal_matches_type
from flytelite.console.forms import literal_from_text, literal_to_json, text_for_literal, widget_for
from flytelite.errors import InvalidArgument

S = T.SimpleType
INT, FLOAT, STR, BOOL = (T.LiteralType(simple=s) for s in (S.INTEGER, S.FLOAT, S.STRING, S.BOOLEAN))
DATETIME, DURATION, STRUCT = (T.LiteralType(simple=s) for s in (S.DATETIME, S.DURATION, S.STRUCT))
NONE = T.LiteralType(simple=S.NONE)
ENUM = T.LiteralType(enum_type=T.EnumType(values=["red", "green"]))
LIST_INT = T.LiteralType(collection_type=INT)
DICT_FLOAT = T.LiteralType(map_value_type=FLOAT)
OPT_INT = T.LiteralType(union_type=T.UnionType(variants=[INT, NONE]))
FILE = T.LiteralType(blob=T.BlobType(dimensionality=T.BlobType.SINGLE))


@pytest.mark.parametrize("lt, text, expected, widget", [
    (INT, " 42 ", 42, "int"),
    (FLOAT, "2.5", 2.5, "float"),
    (STR, "hello world", "hello world", "str"),
    (BOOL, "true", True, "bool"),
    (BOOL, "false", False, "bool"),
    (DATETIME, "2026-01-02T03:04:05Z", "2026-01-02T03:04:05+00:00", "datetime"),
    (DATETIME, "2026-01-02T03:04", "2026-01-02T03:04:00+00:00", "datetime"),  # datetime-local means UTC
    (DURATION, "90", 90.0, "duration"),
    (DURATION, "1h30m", 5400.0, "duration"),
    (ENUM, "green", "green", "enum"),
    (LIST_INT, "[1, 2, 3]", [1, 2, 3], "json"),
    (DICT_FLOAT, '{"a": 1, "b": 2.5}', {"a": 1.0, "b": 2.5}, "json"),
    (OPT_INT, "7", 7, "json"),
    (OPT_INT, "null", None, "json"),
    (STRUCT, '{"x": 1, "label": "p"}', {"x": 1, "label": "p"}, "json"),
    (FILE, "/data/in.csv", "/data/in.csv", "blob"),
])
def test_text_becomes_a_literal_of_the_expected_type(lt, text, expected, widget):
    assert widget_for(lt).kind == widget
    lit = literal_from_text(text, lt, "x")
    assert literal_to_json(lit) == expected
    assert literal_matches_type(lit, lt), "the server's own type check must accept what the form sends"


def test_dataclasses_travel_as_msgpack_like_flytekit_sends_them():
    lit = literal_from_text('{"x": 1}', STRUCT)
    assert lit.scalar.binary.tag == "msgpack" and msgpack.unpackb(lit.scalar.binary.value) == {"x": 1}


def test_durations_and_datetimes_are_exact():
    assert literal_from_text("2m5s", DURATION).scalar.primitive.duration.ToTimedelta() == timedelta(seconds=125)
    dt = literal_from_text("2026-01-02T05:04:05+02:00", DATETIME).scalar.primitive.datetime
    assert dt.ToDatetime(tzinfo=timezone.utc) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize("lt, text, message", [
    (INT, "three", "seconds: 'three' does not fit type INTEGER"),
    (INT, "2.5", "does not fit type INTEGER"),
    (BOOL, "maybe", "expected true or false"),
    (ENUM, "blue", "choose one of red, green"),
    (LIST_INT, "[1, 2", "expected JSON for"),
    (LIST_INT, '{"a": 1}', "expected a JSON list"),
    (LIST_INT, '[1, "x"]', "seconds[1]: 'x' does not fit type INTEGER"),
    (DURATION, "soon", "expected seconds (90) or hours/minutes/seconds"),
    (OPT_INT, '"x"', "fits none of"),
    (FILE, "  ", "give the file's path or URI"),
])
def test_wrong_values_say_what_is_wrong(lt, text, message):
    with pytest.raises(InvalidArgument) as err:
        literal_from_text(text, lt, "seconds")
    assert message in str(err.value)


def test_defaults_prefill_the_form():
    assert text_for_literal(L.Literal(scalar=L.Scalar(primitive=L.Primitive(integer=3))), INT) == "3"
    assert text_for_literal(L.Literal(scalar=L.Scalar(primitive=L.Primitive(boolean=True))), BOOL) == "true"
    assert text_for_literal(literal_from_text("[1, 2]", LIST_INT), LIST_INT) == "[\n 1,\n 2\n]"
    assert text_for_literal(literal_from_text("null", OPT_INT), OPT_INT) == ""
