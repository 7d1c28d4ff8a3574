"""The raw-container data protocol (Flyte's copilot), done in-process for containers run as local processes.

Before the command runs, a task's inputs become files in its input dir (flytekit ContainerTask's
`input_data_dir`, /var/inputs in Flyte): one file per primitive holding its text, blobs copied in,
collections and maps as folders, plus `inputs.pb` and `inputs.json` (or `.yaml`). After it ran, each
declared output is read from a file of its name in the output dir (`/var/outputs/<name>`): simple
types parsed from text, blobs (files or folders) uploaded; a file named `_ERROR` fails the task with
its content. Formats follow flytecopilot's downloader and uploader (Go's number/duration/time text).
This module never starts processes.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import fsspec
import yaml
from flyteidl.core import interface_pb2, literals_pb2, tasks_pb2, types_pb2
from google.protobuf import json_format, struct_pb2, timestamp_pb2

from flytelite.storage import BlobStore

ERROR_FILE = "_ERROR"
# flytecopilot refuses primitive output files larger than this.
MAX_PRIMITIVE_BYTES = 1024
SIMPLE = types_pb2.SimpleType
MULTIPART = types_pb2.BlobType.MULTIPART


class OutputError(Exception):
    """An output could not be read from the container's output dir (the message says which and why)."""


class ContainerReportedError(Exception):
    """The container wrote an _ERROR file: a user error whose message is the file's content."""


# -- inputs ---------------------------------------------------------------------------------
def write_inputs(blobs: BlobStore, inputs: literals_pb2.LiteralMap, to_dir: Path, fmt: int) -> None:
    """Lay the inputs out in to_dir as flytecopilot's downloader does."""
    to_dir.mkdir(parents=True, exist_ok=True)
    values: dict = {}
    local = literals_pb2.LiteralMap()
    for name, lit in inputs.literals.items():
        value, rewritten = _write_literal(blobs, lit, to_dir / name)
        values[name] = value
        local.literals[name].CopyFrom(rewritten)
    (to_dir / "inputs.pb").write_bytes(local.SerializeToString())
    if fmt == tasks_pb2.DataLoadingConfig.JSON:
        (to_dir / "inputs.json").write_text(json.dumps(values))
    elif fmt == tasks_pb2.DataLoadingConfig.YAML:
        (to_dir / "inputs.yaml").write_text(yaml.safe_dump(values))


def _write_literal(blobs: BlobStore, lit: literals_pb2.Literal, path: Path):
    """(native value for inputs.json, the literal with blob URIs pointing at the local copies)."""
    kind = lit.WhichOneof("value")
    if kind == "offloaded_metadata":
        return _write_literal(blobs, blobs.read_proto(lit.offloaded_metadata.uri, literals_pb2.Literal), path)
    if kind == "collection":
        path.mkdir(parents=True, exist_ok=True)
        values, out = [], literals_pb2.LiteralCollection()
        for i, item in enumerate(lit.collection.literals):
            value, rewritten = _write_literal(blobs, item, path / str(i))
            values.append(value)
            out.literals.append(rewritten)
        return values, literals_pb2.Literal(collection=out)
    if kind == "map":
        path.mkdir(parents=True, exist_ok=True)
        by_key, out_map = {}, literals_pb2.LiteralMap()
        for key, item in lit.map.literals.items():
            by_key[key], rewritten = _write_literal(blobs, item, path / key)
            out_map.literals[key].CopyFrom(rewritten)
        return by_key, literals_pb2.Literal(map=out_map)
    if kind != "scalar":
        raise ValueError(f"a {kind} literal cannot be given to a raw container")
    value, scalar = _write_scalar(blobs, lit.scalar, path)
    return value, literals_pb2.Literal(scalar=scalar)


def _write_scalar(blobs: BlobStore, sc: literals_pb2.Scalar, path: Path):
    kind = sc.WhichOneof("value")
    if kind == "primitive":
        value, text = _primitive(sc.primitive)
        path.write_text(text)
        return value, sc
    if kind in ("blob", "schema"):
        uri = sc.blob.uri if kind == "blob" else sc.schema.uri
        multipart = kind == "schema" or sc.blob.metadata.type.dimensionality == MULTIPART
        _download(blobs, uri, path, multipart)
        out = literals_pb2.Scalar()
        out.CopyFrom(sc)
        if kind == "blob":
            out.blob.uri = str(path)
        else:
            out.schema.uri = str(path)
        return str(path), out
    if kind == "binary":
        path.write_bytes(sc.binary.value)
        return base64.b64encode(sc.binary.value).decode(), sc
    if kind == "error":
        path.write_text(sc.error.message)
        return sc.error.message, sc
    if kind == "generic":
        text = json_format.MessageToJson(sc.generic)
        path.write_text(text)
        return json.loads(text), sc
    if kind == "union":
        value, inner = _write_literal(blobs, sc.union.value, path)
        return value, literals_pb2.Scalar(union=literals_pb2.Union(value=inner, type=sc.union.type))
    if kind == "none_type":
        path.write_text("null")
        return None, sc
    raise ValueError(f"a {kind} value cannot be given to a raw container")


def _download(blobs: BlobStore, uri: str, path: Path, multipart: bool) -> None:
    fs, src = (blobs.fs, uri) if blobs.contains(uri) else fsspec.core.url_to_fs(uri)
    if multipart:
        path.mkdir(parents=True, exist_ok=True)
        fs.get(src.rstrip("/") + "/", str(path) + "/", recursive=True)
    else:
        fs.get(src, str(path))


def _primitive(p: literals_pb2.Primitive) -> tuple[object, str]:
    kind = p.WhichOneof("value")
    if kind == "string_value":
        return p.string_value, p.string_value
    if kind == "boolean":
        return p.boolean, "true" if p.boolean else "false"
    if kind == "integer":
        return p.integer, str(p.integer)
    if kind == "float_value":
        return p.float_value, go_float(p.float_value)
    if kind == "datetime":
        text = p.datetime.ToJsonString()
        return text, text
    if kind == "duration":
        delta = p.duration.ToTimedelta()
        return int(delta / timedelta(microseconds=1)) * 1000, go_duration(delta)
    return None, "null"


def go_float(f: float) -> str:
    """Go's strconv.FormatFloat(f, 'f', -1, 64): shortest digits, never an exponent."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    text = format(Decimal(repr(f)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def go_duration(delta: timedelta) -> str:
    """Go's time.Duration.String(): 1h2m3.5s, 1.5s, 300ms, 0s."""
    nanos = int(delta / timedelta(microseconds=1)) * 1000
    if nanos == 0:
        return "0s"
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(Decimal(nanos) / size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _trim(Decimal(rest) / 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    return f"{sign}{minutes}m{text}" if minutes else sign + text


def _trim(d: Decimal) -> str:
    text = format(d, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


# -- outputs --------------------------------------------------------------------------------
def read_outputs(blobs: BlobStore, outputs: interface_pb2.VariableMap | None, from_dir: Path,
                 raw_prefix: str) -> literals_pb2.LiteralMap:
    """The task's outputs from from_dir, as flytecopilot's uploader reads them (blobs go under raw_prefix)."""
    error_file = from_dir / ERROR_FILE
    if error_file.is_file():
        raise ContainerReportedError(error_file.read_text(errors="replace")[: 1024 * 1024])
    result = literals_pb2.LiteralMap()
    for name, var in (outputs.variables.items() if outputs is not None else ()):
        path = from_dir / name
        t = var.type
        kind = t.WhichOneof("type")
        if kind == "blob":
            result.literals[name].CopyFrom(_upload(blobs, path, f"{raw_prefix.rstrip('/')}/{name}", t.blob))
        elif kind == "simple":
            result.literals[name].CopyFrom(_read_simple(t.simple, path, name))
        else:
            raise OutputError(f"output {name!r} is a {kind} type; the raw-container protocol reads only "
                              "simple types and files or folders (as Flyte's copilot)")
    return result


def _upload(blobs: BlobStore, path: Path, target: str, blob_type: types_pb2.BlobType) -> literals_pb2.Literal:
    if not path.exists():
        raise OutputError(f"output {path.name!r} was not written: expected a file or folder at {path}")
    if path.is_dir():
        blobs.makedirs(target)
        blobs.fs.put(str(path) + "/", target.rstrip("/") + "/", recursive=True)
        dimensionality = MULTIPART
    else:
        blobs.write_bytes(target, path.read_bytes())
        dimensionality = types_pb2.BlobType.SINGLE
    blob = literals_pb2.Blob(uri=target, metadata=literals_pb2.BlobMetadata(
        type=types_pb2.BlobType(format=blob_type.format, dimensionality=dimensionality)))
    return literals_pb2.Literal(scalar=literals_pb2.Scalar(blob=blob))


def _read_simple(simple: int, path: Path, name: str) -> literals_pb2.Literal:
    if not path.is_file():
        raise OutputError(f"output {name!r} was not written: expected a file at {path}")
    if path.stat().st_size > MAX_PRIMITIVE_BYTES:
        raise OutputError(f"output {name!r} is {path.stat().st_size} bytes; a {SIMPLE.Name(simple)} output "
                          f"file holds at most {MAX_PRIMITIVE_BYTES}")
    text = path.read_text(errors="replace").strip(" \n\t")
    try:
        scalar = _parse_simple(simple, text)
    except ValueError as e:
        raise OutputError(f"output {name!r} ({SIMPLE.Name(simple)}) could not be read from {text!r}: {e}") from None
    return literals_pb2.Literal(scalar=scalar)


_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _parse_simple(simple: int, text: str) -> literals_pb2.Scalar:
    P = literals_pb2.Primitive
    if simple == SIMPLE.INTEGER:
        return literals_pb2.Scalar(primitive=P(integer=int(text, 10)))
    if simple == SIMPLE.FLOAT:
        return literals_pb2.Scalar(primitive=P(float_value=float(text)))
    if simple == SIMPLE.BOOLEAN:
        if text not in _GO_TRUE | _GO_FALSE:
            raise ValueError("not a boolean (true/false, 1/0, t/f)")
        return literals_pb2.Scalar(primitive=P(boolean=text in _GO_TRUE))
    if simple == SIMPLE.STRING:
        return literals_pb2.Scalar(primitive=P(string_value=text))
    if simple == SIMPLE.DURATION:
        d = P()
        d.duration.FromTimedelta(parse_go_duration(text))
        return literals_pb2.Scalar(primitive=d)
    if simple == SIMPLE.DATETIME:
        ts = timestamp_pb2.Timestamp()
        ts.FromJsonString(text)
        return literals_pb2.Scalar(primitive=P(datetime=ts))
    if simple == SIMPLE.STRUCT:
        st = struct_pb2.Struct()
        json_format.Parse(text, st, ignore_unknown_fields=True)
        return literals_pb2.Scalar(generic=st)
    if simple == SIMPLE.BINARY:
        return literals_pb2.Scalar(binary=literals_pb2.Binary(value=text.encode(), tag="msgpack"))
    if simple == SIMPLE.ERROR:
        return literals_pb2.Scalar(error=types_pb2.Error(message=text))
    if simple == SIMPLE.NONE:
        return literals_pb2.Scalar(none_type=literals_pb2.Void())
    raise ValueError(f"unsupported simple type {SIMPLE.Name(simple)}")


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def parse_go_duration(text: str) -> timedelta:
    """Go's time.ParseDuration: e.g. 300ms, -1.5h, 2h45m."""
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if body == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    for m in _DURATION_PART.finditer(body):
        if m.start() != pos:
            break
        seconds += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError("not a duration (e.g. 300ms, 1.5h, 2h45m)")
    return timedelta(seconds=sign * seconds)


def clean_dir(path: Path) -> Path:
    """An empty directory at path (a retried attempt must not see the last attempt's files)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    return path
