"""Typed inputs for the console's forms: a field per LiteralType, and the text typed in it as a Literal (pure).

Scalars get their own inputs (number, text, checkbox, date-time, enum select);
collections, maps, dataclasses and unions read JSON. Conversion follows what
flytekit sends for the same Python values (dataclasses and dicts as msgpack, enums
as strings, files by URI), so the server's type check and the task see the same
literals a `pyflyte run` would produce. A value that does not fit says why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T
from google.protobuf import json_format

from flytelite.compiler import type_to_str
from flytelite.errors import InvalidArgument

S = T.SimpleType
_DURATION = re.compile(r"^(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m)?(?:(\d+(?:\.\d*)?)s)?$")


@dataclass(frozen=True)
class Widget:
    """How the form asks for a value: kind is int, float, str, bool, datetime, duration, enum, blob or json."""

    kind: str
    type_text: str
    choices: tuple[str, ...] = ()


def widget_for(lt: T.LiteralType) -> Widget:
    text = type_to_str(lt)
    kind = lt.WhichOneof("type")
    if kind == "simple":
        return Widget({S.INTEGER: "int", S.FLOAT: "float", S.STRING: "str", S.BOOLEAN: "bool",
                       S.DATETIME: "datetime", S.DURATION: "duration"}.get(lt.simple, "json"), text)
    if kind == "enum_type":
        return Widget("enum", text, tuple(lt.enum_type.values))
    if kind == "blob":
        return Widget("blob", text)
    return Widget("json", text)


def literal_from_text(text: str, lt: T.LiteralType, name: str = "value") -> L.Literal:
    """The Literal a form field's text stands for, given the expected type."""
    kind = widget_for(lt).kind
    if kind == "json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"{name}: expected JSON for {type_to_str(lt)}, got {text!r} ({exc.msg})") from None
        return literal_from_json(value, lt, name)
    return literal_from_json(text, lt, name)


def literal_from_json(value: Any, lt: T.LiteralType, name: str = "value") -> L.Literal:
    """A JSON value (or a form's string) as a Literal of type `lt`."""
    kind = lt.WhichOneof("type")
    try:
        if kind == "simple":
            return _simple(value, lt.simple, lt)
        if kind == "enum_type":
            if str(value) not in lt.enum_type.values:
                raise ValueError(f"choose one of {', '.join(lt.enum_type.values)}")
            return _prim(string_value=str(value))
        if kind == "blob":
            uri = str(value).strip()
            if not uri:
                raise ValueError("give the file's path or URI")
            return L.Literal(scalar=L.Scalar(blob=L.Blob(uri=uri, metadata=L.BlobMetadata(type=lt.blob))))
        if kind == "collection_type":
            if not isinstance(value, list):
                raise ValueError("expected a JSON list")
            items = [literal_from_json(v, lt.collection_type, f"{name}[{i}]") for i, v in enumerate(value)]
            return L.Literal(collection=L.LiteralCollection(literals=items))
        if kind == "map_value_type":
            if not isinstance(value, dict):
                raise ValueError("expected a JSON object")
            return L.Literal(map=L.LiteralMap(literals={
                str(k): literal_from_json(v, lt.map_value_type, f"{name}[{k!r}]") for k, v in value.items()}))
        if kind == "union_type":
            return _union(value, lt, name)
        if kind == "structured_dataset_type":
            return L.Literal(scalar=L.Scalar(structured_dataset=L.StructuredDataset(
                uri=str(value), metadata=L.StructuredDatasetMetadata(structured_dataset_type=lt.structured_dataset_type))))
    except InvalidArgument:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidArgument(f"{name}: {value!r} does not fit type {type_to_str(lt)}: {exc}") from None
    raise InvalidArgument(f"{name}: the console cannot enter values of type {type_to_str(lt)}; "
                          f"launch with pyflyte or FlyteRemote instead")


def _prim(**kw) -> L.Literal:
    return L.Literal(scalar=L.Scalar(primitive=L.Primitive(**kw)))


def _simple(value: Any, simple: int, lt: T.LiteralType) -> L.Literal:
    if simple == S.INTEGER:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("expected a whole number")
        return _prim(integer=int(str(value).strip()) if isinstance(value, str) else int(value))
    if simple == S.FLOAT:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        return _prim(float_value=float(value))
    if simple == S.STRING:
        return _prim(string_value=value if isinstance(value, str) else json.dumps(value))
    if simple == S.BOOLEAN:
        if isinstance(value, bool):
            return _prim(boolean=value)
        text = str(value).strip().lower()
        if text not in ("true", "false", "1", "0", "on", "off", "yes", "no"):
            raise ValueError("expected true or false")
        return _prim(boolean=text in ("true", "1", "on", "yes"))
    if simple == S.DATETIME:
        dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        p = L.Primitive()
        p.datetime.FromDatetime((dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(timezone.utc))
        return L.Literal(scalar=L.Scalar(primitive=p))
    if simple == S.DURATION:
        p = L.Primitive()
        p.duration.FromTimedelta(_duration(value))
        return L.Literal(scalar=L.Scalar(primitive=p))
    if simple == S.NONE:
        return L.Literal(scalar=L.Scalar(none_type=L.Void()))
    if simple == S.STRUCT:
        return _struct(value, lt)
    raise ValueError(f"no console input for {S.Name(simple)}")


def _duration(value: Any) -> timedelta:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=value)
    text = str(value).strip()
    try:
        return timedelta(seconds=float(text))
    except ValueError:
        pass
    m = _DURATION.match(text)
    if not text or m is None:
        raise ValueError("expected seconds (90) or hours/minutes/seconds (1h30m, 2m5s)")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return timedelta(hours=h, minutes=mi, seconds=s)


def _struct(value: Any, lt: T.LiteralType) -> L.Literal:
    """Dataclasses, pydantic models and plain dicts: msgpack, as flytekit 1.16 sends them."""
    import msgpack

    if not isinstance(value, (dict, list)):
        raise ValueError("expected a JSON object")
    return L.Literal(scalar=L.Scalar(binary=L.Binary(value=msgpack.packb(value), tag="msgpack")))


def _union(value: Any, lt: T.LiteralType, name: str) -> L.Literal:
    variants = list(lt.union_type.variants)
    # Optional[X]: an empty field or null means None.
    if value is None or value == "":
        for v in variants:
            if v.WhichOneof("type") == "simple" and v.simple == S.NONE:
                return L.Literal(scalar=L.Scalar(union=L.Union(
                    value=L.Literal(scalar=L.Scalar(none_type=L.Void())), type=v)))
    problems = []
    for v in variants:
        if v.WhichOneof("type") == "simple" and v.simple == S.NONE:
            continue
        try:
            inner = literal_from_json(value, v, name)
        except InvalidArgument as exc:
            problems.append(str(exc))
            continue
        return L.Literal(scalar=L.Scalar(union=L.Union(value=inner, type=v)))
    raise InvalidArgument(f"{name}: {value!r} fits none of {type_to_str(lt)}: " + "; ".join(problems))


def text_for_literal(lit: L.Literal, lt: T.LiteralType) -> str:
    """A literal (a default input) as the text the form field shows."""
    value = literal_to_json(lit)
    kind = widget_for(lt).kind
    if kind == "json":
        return json.dumps(value, indent=1) if value is not None else ""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def literal_to_json(lit: L.Literal) -> Any:
    kind = lit.WhichOneof("value")
    if kind == "collection":
        return [literal_to_json(x) for x in lit.collection.literals]
    if kind == "map":
        return {k: literal_to_json(v) for k, v in lit.map.literals.items()}
    if kind != "scalar":
        return None
    s = lit.scalar
    sk = s.WhichOneof("value")
    if sk == "primitive":
        p = s.primitive
        pk = p.WhichOneof("value")
        if pk == "datetime":
            return p.datetime.ToDatetime(tzinfo=timezone.utc).isoformat()
        if pk == "duration":
            return p.duration.ToTimedelta().total_seconds()
        return getattr(p, pk) if pk else None
    if sk == "union":
        return literal_to_json(s.union.value)
    if sk == "blob":
        return s.blob.uri
    if sk == "structured_dataset":
        return s.structured_dataset.uri
    if sk == "generic":
        return json_format.MessageToDict(s.generic)
    if sk == "binary" and s.binary.tag == "msgpack":
        import msgpack

        return msgpack.unpackb(s.binary.value, strict_map_key=False)
    return None
