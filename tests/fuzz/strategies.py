"""Hypothesis strategies for any protobuf request, built from its descriptor, and for mutations of its bytes.

Half the requests are "plausible": their values come from what the server knows (`Pools`: the seeded
project, names, versions, node ids) and from the defined enum values, so they reach deep into a
handler. The others lean on boundaries: integer limits of each field type, unknown enum numbers, empty,
huge, NUL-carrying and non-ASCII strings, timestamps and durations beyond their range.
Byte mutations (truncation, flipped and inserted bytes, bad varints, nesting past the parser's depth
limit, random bytes) exercise the parsing edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from google.protobuf import descriptor, message_factory
from google.protobuf.message import Message
from hypothesis import strategies as st

FD = descriptor.FieldDescriptor
MAX_DEPTH = 5

_INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1), FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1), FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1), FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1), FD.TYPE_FIXED64: (0, 2**64 - 1),
}
_SMALL_INTS = [0, 1, 2, 3, 5, 10, 100, -1]
EDGE_STRINGS = ["", " ", "\x00", "a\x00b", "../../etc/passwd", "/abs/path", "x" * 256, "x" * 100_000,
                "é漢🙂", "%s%n%x", "{{.Inputs.x}}", "-1", "9" * 30, "null", "a/b", "UPPER", "s3://bucket/key",
                "local:///tmp/x", "flyte://v1/flytesnacks/development/x/n0/i", "*", "1e999"]
FILTERS = ["eq(phase,SUCCEEDED)", "eq(phase,RUNNING)+gte(created_at,2024-01-01T00:00:00Z)", "gte(duration,abc)",
           "value_in(phase,1;2;3)", "eq(name,x)", "contains(name,x)", "gt(duration,1e999)", "eq(state,999)",
           f"eq(phase,{2**64})", "lt(created_at,yesterday)", "eq(colour,red)", "bogus", "eq(,)", "eq(a,b",
           "value_in(phase,)", "eq(retry_attempt,-1)", "eq(workflow.name,x)+eq(launch_plan.version,v1)"]
TOKENS = ["", "0", "1", "10", "100", str(2**62), str(2**63), str(2**64 + 1), "-1", "abc", "1.5", " 7"]
# What plausible requests carry in fields no pool names.
PLAUSIBLE = {"token": ["", "0", "1"], "filters": ["", "eq(phase,SUCCEEDED)", "eq(name,fz_echo)"]}


@dataclass
class Pools:
    """Strings the server knows, by field name: a request built from them reaches the handler's real work."""

    by_field: dict[str, list[str]] = field(default_factory=dict)

    def strings(self, name: str, plausible: bool = False) -> st.SearchStrategy[str]:
        known = self.by_field.get(name, [])
        if plausible:
            return st.sampled_from(known or PLAUSIBLE.get(name) or ["", "x"])
        special = TOKENS if name == "token" else FILTERS if name == "filters" else []
        choices = [st.sampled_from(EDGE_STRINGS), st.text(max_size=12)]
        if known or special:
            choices.insert(0, st.sampled_from(known + special))
        return st.one_of(*choices)


def integers(kind: int) -> st.SearchStrategy[int]:
    lo, hi = _INT_RANGES[kind]
    bounds = [lo, hi, lo + 1, hi - 1, 2**31 - 1, 2**31, 2**53, 2**62, 2**63 - 1]
    edges = [v for v in _SMALL_INTS + bounds if lo <= v <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def floats() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from([0.0, -1.0, 1.5, 1e308, -1e308, math.inf, -math.inf, math.nan]),
                     st.floats(allow_nan=True, allow_infinity=True))


def enum_numbers(enum: descriptor.EnumDescriptor) -> st.SearchStrategy[int]:
    defined = [v.number for v in enum.values]
    return st.sampled_from(defined * 3 + [999, -1, 2**31 - 1])


def scalar(fd: descriptor.FieldDescriptor, pools: Pools, plausible: bool = False) -> st.SearchStrategy:
    if fd.type == FD.TYPE_STRING:
        return pools.strings(fd.name, plausible)
    if plausible:
        return _plausible_scalar(fd)
    if fd.type == FD.TYPE_BYTES:
        return st.one_of(st.sampled_from([b"", b"\x00" * 16, bytes(range(16)), b"\xff" * 40]),
                         st.binary(max_size=24))
    if fd.type == FD.TYPE_BOOL:
        return st.booleans()
    if fd.type == FD.TYPE_ENUM:
        return enum_numbers(fd.enum_type)
    if fd.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return floats()
    return integers(fd.type)


def _plausible_scalar(fd: descriptor.FieldDescriptor) -> st.SearchStrategy:
    if fd.type == FD.TYPE_BYTES:
        return st.sampled_from([b"", bytes(range(16))])
    if fd.type == FD.TYPE_BOOL:
        return st.booleans()
    if fd.type == FD.TYPE_ENUM:
        return st.sampled_from([v.number for v in fd.enum_type.values])
    if fd.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return st.sampled_from([0.0, 1.5])
    return st.sampled_from([0, 1, 2, 3, 10])


def _repeated(fd: descriptor.FieldDescriptor) -> bool:
    repeated = getattr(fd, "is_repeated", None)
    return bool(repeated) if repeated is not None else fd.label == FD.LABEL_REPEATED


_CACHE: dict[tuple[str, int, bool], st.SearchStrategy] = {}


def requests(desc: descriptor.Descriptor, pools: Pools) -> st.SearchStrategy[Message]:
    """Requests of type `desc`, plausible or on the boundaries."""
    return st.one_of(messages(desc, pools, plausible=True), messages(desc, pools))


def messages(desc: descriptor.Descriptor, pools: Pools, depth: int = 0,
             plausible: bool = False) -> st.SearchStrategy[Message]:
    """Messages of type `desc`: identifiers often get every field, other messages a random subset."""
    key = (desc.full_name, depth, plausible)
    if key not in _CACHE:
        _CACHE[key] = _messages(desc, pools, depth, plausible)
    return _CACHE[key]


def _messages(desc: descriptor.Descriptor, pools: Pools, depth: int, plausible: bool) -> st.SearchStrategy[Message]:
    cls = message_factory.GetMessageClass(desc)
    fields = list(desc.fields)

    @st.composite
    def build(draw) -> Message:
        msg = cls()
        if depth >= MAX_DEPTH or not fields:
            return msg
        if desc.name.endswith("Identifier") and (plausible or draw(st.booleans())):
            chosen = fields
        else:
            chosen = draw(st.lists(st.sampled_from(fields), max_size=min(len(fields), 6), unique_by=lambda f: f.number))
        for fd in chosen:
            _set(draw, msg, fd, pools, depth, plausible)
        return msg

    return build()


def _value(fd: descriptor.FieldDescriptor, pools: Pools, depth: int, plausible: bool) -> st.SearchStrategy:
    if fd.type == FD.TYPE_MESSAGE:
        return messages(fd.message_type, pools, depth + 1, plausible)
    return scalar(fd, pools, plausible)


def _set(draw, msg: Message, fd: descriptor.FieldDescriptor, pools: Pools, depth: int, plausible: bool) -> None:
    target = getattr(msg, fd.name)
    if fd.type == FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry:
        key_fd, value_fd = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        entries = draw(st.dictionaries(scalar(key_fd, pools, plausible), _value(value_fd, pools, depth, plausible),
                                       max_size=3))
        for k, v in entries.items():
            if value_fd.type == FD.TYPE_MESSAGE:
                target[k].CopyFrom(v)
            else:
                target[k] = v
        return
    if _repeated(fd):
        for v in draw(st.lists(_value(fd, pools, depth, plausible), max_size=3)):
            if fd.type == FD.TYPE_MESSAGE:
                target.add().CopyFrom(v)
            else:
                target.append(v)
        return
    value = draw(_value(fd, pools, depth, plausible))
    if fd.type == FD.TYPE_MESSAGE:
        target.CopyFrom(value)
    else:
        setattr(msg, fd.name, value)


# ---- bytes ---------------------------------------------------------------------------------------

def varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def deep_nesting(levels: int) -> bytes:
    """Field 1 holding field 1 holding ... as length-delimited bytes: too deep for any message whose field 1
    is a message (an id, a literal), garbage for the others."""
    data = b""
    for _ in range(levels):
        data = b"\x0a" + varint(len(data)) + data
    return data


@st.composite
def mutations(draw, data: bytes) -> bytes:
    """`data` truncated, with bytes flipped or inserted, a broken varint appended, or replaced outright."""
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "bad-varint", "random", "deep", "deep-group"]))
    if kind == "truncate":
        return data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    if kind == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        return data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
    if kind == "insert":
        i = draw(st.integers(0, len(data)))
        return data[:i] + draw(st.binary(min_size=1, max_size=8)) + data[i:]
    if kind == "bad-varint":
        return data + b"\x08" + b"\xff" * 11
    if kind == "deep":
        return deep_nesting(draw(st.integers(20, 400)))
    if kind == "deep-group":  # nested start-group tags of an unknown field (1000)
        return b"\xc3\x3e" * draw(st.integers(50, 300))
    return draw(st.binary(max_size=64))
