"""Literal -> readable text, table style; HTML output escapes and links blobs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgpack
import pytest
from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T
from google.protobuf import struct_pb2

from flytelite.console.literals import MAX_ITEMS, HtmlFormatter, Links, render_literal, render_literal_map


def prim(**kw) -> L.Literal:
    return L.Literal(scalar=L.Scalar(primitive=L.Primitive(**kw)))


def coll(*items: L.Literal) -> L.Literal:
    return L.Literal(collection=L.LiteralCollection(literals=list(items)))


def lmap(**items: L.Literal) -> L.Literal:
    return L.Literal(map=L.LiteralMap(literals=items))


def blob(uri: str, dim=T.BlobType.SINGLE, fmt="") -> L.Literal:
    return L.Literal(scalar=L.Scalar(blob=L.Blob(uri=uri, metadata=L.BlobMetadata(
        type=T.BlobType(format=fmt, dimensionality=dim)))))


def when() -> L.Literal:
    lit = prim()
    lit.scalar.primitive.datetime.FromDatetime(datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc))
    return lit


def took() -> L.Literal:
    lit = prim()
    lit.scalar.primitive.duration.FromTimedelta(timedelta(minutes=1, seconds=5))
    return lit


def struct() -> L.Literal:
    s = struct_pb2.Struct()
    s.update({"b": [1, 2], "a": "x"})
    return L.Literal(scalar=L.Scalar(generic=s))


CASES = [
    (prim(integer=42), "42"),
    (prim(integer=-7), "-7"),
    (prim(float_value=2.5), "2.5"),
    (prim(string_value="it's"), '"it\'s"'),
    (prim(boolean=False), "False"),
    (when(), "2024-05-01T12:30:00Z"),
    (took(), "0:01:05"),
    (L.Literal(scalar=L.Scalar(none_type=L.Void())), "None"),
    (coll(prim(integer=1), prim(integer=2)), "[1, 2]"),
    (coll(), "[]"),
    (lmap(a=prim(integer=1), b=coll(prim(string_value="x"))), "{'a': 1, 'b': ['x']}"),
    (blob("/blobs/raw/ab/f.csv", fmt="csv"), "FlyteFile('/blobs/raw/ab/f.csv', format='csv')"),
    (blob("/blobs/raw/ab/dir", dim=T.BlobType.MULTIPART), "FlyteDirectory('/blobs/raw/ab/dir')"),
    (struct(), '{\n  "a": "x",\n  "b": [\n    1.0,\n    2.0\n  ]\n}'),
    (L.Literal(scalar=L.Scalar(binary=L.Binary(value=msgpack.packb({"x": 1, "y": [True]}), tag="msgpack"))),
     '{\n  "x": 1,\n  "y": [\n    true\n  ]\n}'),
    (L.Literal(scalar=L.Scalar(binary=L.Binary(value=b"\x00\x01\x02", tag="pickle"))),
     "Binary(3 bytes, tag='pickle')"),
    (L.Literal(scalar=L.Scalar(union=L.Union(value=prim(integer=3)))), "3"),
    (L.Literal(scalar=L.Scalar(structured_dataset=L.StructuredDataset(
        uri="/blobs/raw/sd", metadata=L.StructuredDatasetMetadata(
            structured_dataset_type=T.StructuredDatasetType(format="parquet"))))),
     "StructuredDataset('/blobs/raw/sd', format='parquet')"),
    (L.Literal(scalar=L.Scalar(error=T.Error(failed_node_id="n1", message="boom"))), "Error(from node 'n1': boom)"),
    (L.Literal(offloaded_metadata=L.LiteralOffloadedMetadata(uri="/blobs/off.pb", size_bytes=10)),
     "Offloaded('/blobs/off.pb', 10 bytes)"),
    (L.Literal(), "(empty literal)"),
]


@pytest.mark.parametrize(("literal", "text"), CASES)
def test_plain_text(literal, text):
    assert render_literal(literal) == text


def test_long_collections_are_cut():
    text = render_literal(coll(*[prim(integer=i) for i in range(MAX_ITEMS + 5)]))
    assert text.endswith(f"{MAX_ITEMS - 1}, ... 5 more]")


def test_html_escapes_values_and_links_blobs():
    fmt = HtmlFormatter(Links(lambda uri: "/dl?x=1&y=2" if uri.startswith("/blobs/") else None))
    lm = L.LiteralMap(literals={
        "<name>": prim(string_value="<script>alert('x')</script>"),
        "f": blob("/blobs/a<b>.txt"),
        "g": blob("s3://elsewhere/x"),
    })
    rendered = dict(render_literal_map(lm, fmt))
    assert rendered["&lt;name&gt;"] == "&quot;&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&quot;"
    assert rendered["f"] == "FlyteFile(<a href=\"/dl?x=1&amp;y=2\">/blobs/a&lt;b&gt;.txt</a>)"
    assert rendered["g"] == "FlyteFile(&#x27;s3://elsewhere/x&#x27;)"
