"""JSON-schema comparison for STRUCT types (dataclasses and pydantic models).

flytekit stores a draft 2020-12 JSON schema in ``LiteralType.metadata`` of a STRUCT. Flyte accepts a
binding when both schemas are identical, or when every value valid for the upstream schema is also
valid for the downstream one (a child dataclass flows into a parent: "big to small"). Flyte delegates
the latter to a schema-compare library and ignores keywords it has not implemented; we check the
keywords that decide compatibility (type, required, properties, items, enum/const, anyOf/oneOf,
$ref) and stay lenient on the rest, as Flyte does.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, struct_pb2


def _to_py(s: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(s)


def is_same_schema(a: struct_pb2.Struct, b: struct_pb2.Struct) -> bool:
    return _to_py(a) == _to_py(b)


def is_sub_schema(source: struct_pb2.Struct, target: struct_pb2.Struct) -> bool:
    """True when every instance of ``source`` also satisfies ``target``."""
    src_root, tgt_root = _to_py(source), _to_py(target)
    return _Comparer(src_root, tgt_root).sub(src_root, tgt_root, depth=0)


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return set(t) if isinstance(t, list) else {t}


class _Comparer:
    def __init__(self, src_root: dict[str, Any], tgt_root: dict[str, Any]):
        self.src_root = src_root
        self.tgt_root = tgt_root

    @staticmethod
    def _resolve(schema: Any, root: dict[str, Any]) -> Any:
        # Follow local references ("#/$defs/Name") a few hops; remote refs are left as they are.
        for _ in range(32):
            if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
                return schema
            ref = schema["$ref"]
            if not ref.startswith("#"):
                return schema
            node: Any = root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, dict) or part not in node:
                    return schema
                node = node[part]
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**node, **extra} if isinstance(node, dict) else node
        return schema

    def sub(self, s: Any, t: Any, depth: int) -> bool:
        if depth > 64:  # recursive schemas: assume compatible past this depth
            return True
        s = self._resolve(s, self.src_root)
        t = self._resolve(t, self.tgt_root)
        if t is True or t == {}:
            return True
        if t is False:
            return s is False
        if not isinstance(s, dict) or not isinstance(t, dict):
            return s == t
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list):
                rest = {k: v for k, v in s.items() if k != key}
                return all(self.sub({**rest, **branch}, t, depth + 1) for branch in s[key])
        for key in ("anyOf", "oneOf"):
            if isinstance(t.get(key), list):
                rest = {k: v for k, v in t.items() if k != key}
                return any(self.sub(s, {**rest, **branch}, depth + 1) for branch in t[key])
        return self._sub_plain(s, t, depth)

    def _sub_plain(self, s: dict[str, Any], t: dict[str, Any], depth: int) -> bool:
        t_types, s_types = _types(t), _types(s)
        if t_types is not None:
            if s_types is None:
                return False
            widened = set(t_types) | ({"integer"} if "number" in t_types else set())
            if not s_types <= widened:
                return False
        if "enum" in t:
            values = s.get("enum", [s["const"]] if "const" in s else None)
            if values is None or any(v not in t["enum"] for v in values):
                return False
        if "const" in t:
            values = s.get("enum", [s["const"]] if "const" in s else None)
            if values is None or any(v != t["const"] for v in values):
                return False
        if not set(t.get("required", [])) <= set(s.get("required", [])):
            return False
        s_props, t_props = s.get("properties", {}), t.get("properties", {})
        for name, t_prop in t_props.items():
            if name in s_props and not self.sub(s_props[name], t_prop, depth + 1):
                return False
        if "items" in t:
            if "items" not in s:
                return False
            if not self.sub(s["items"], t["items"], depth + 1):
                return False
        for key in ("additionalProperties",):
            if isinstance(t.get(key), dict) and isinstance(s.get(key), dict):
                if not self.sub(s[key], t[key], depth + 1):
                    return False
        return True
