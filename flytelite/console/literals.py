"""Flyte literals as readable, Python-ish text for the console (pure: no I/O).

Scalars read like Python values, collections like lists, maps like dicts,
structs and msgpack-encoded dataclasses as JSON, and blobs by their URI. A
`Formatter` decides how text and blob URIs come out, so the same walk produces
plain text or escaped HTML with links.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass

from flyteidl.core import literals_pb2, types_pb2
from google.protobuf.json_format import MessageToDict

# Long collections and maps are cut here; a console page is not a data viewer.
MAX_ITEMS = 100
_BLOB_KINDS = {types_pb2.BlobType.SINGLE: "FlyteFile", types_pb2.BlobType.MULTIPART: "FlyteDirectory"}


# Files of a folder a page lists, at most.
MAX_FILES = 20


def _no_files(uri: str, limit: int) -> list[str] | None:
    return None


@dataclass(frozen=True)
class Links:
    """How a page links the blobs it shows: `download(uri)` is an href for a file (None when the URI cannot be
    opened here); `files(uri, limit)` the first files of a folder (None when `uri` is not one)."""

    download: Callable[[str], str | None]
    files: Callable[[str, int], list[str] | None] = _no_files

    def __call__(self, uri: str) -> str | None:
        return self.download(uri)


NO_LINKS = Links(lambda uri: None)


class Formatter:
    """Plain text: text as is, blob URIs as quoted strings."""

    def text(self, s: str) -> str:
        return s

    def uri(self, uri: str) -> str:
        return repr(uri)

    def folder(self, uri: str) -> str:
        """A URI that names a folder (a FlyteDirectory, a StructuredDataset, a Schema)."""
        return self.uri(uri)


class HtmlFormatter(Formatter):
    """Escaped HTML: file URIs as download links, a folder's URI followed by links to its files."""

    def __init__(self, links: Links):
        self.links = links

    def text(self, s: str) -> str:
        return html.escape(s)

    def uri(self, uri: str) -> str:
        href = self.links(uri)
        if href is None:
            return html.escape(repr(uri))
        return f'<a href="{html.escape(href)}">{html.escape(uri)}</a>'

    def folder(self, uri: str) -> str:
        files = self.links.files(uri, MAX_FILES + 1) if self.links(uri) is not None else None
        if files is None:
            return self.uri(uri)  # a single file after all, or outside the store
        shown = [f'<a href="{html.escape(href)}">{html.escape(file[len(uri):].lstrip("/"))}</a>'
                 for file in files[:MAX_FILES] if (href := self.links(file)) is not None]
        more = " …" if len(files) > MAX_FILES else ""
        listing = ", ".join(shown) + more if shown else "empty"
        return f"{html.escape(repr(uri))} <span class='files'>(files: {listing})</span>"


PLAIN = Formatter()


def render_literal(lit: literals_pb2.Literal, fmt: Formatter = PLAIN) -> str:
    t = fmt.text
    kind = lit.WhichOneof("value")
    if kind == "scalar":
        return _scalar(lit.scalar, fmt)
    if kind == "collection":
        items = list(lit.collection.literals)
        parts = [render_literal(item, fmt) for item in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            parts.append(t(f"... {len(items) - MAX_ITEMS} more"))
        return t("[") + t(", ").join(parts) + t("]")
    if kind == "map":
        return _map(lit.map.literals, fmt)
    if kind == "offloaded_metadata":
        meta = lit.offloaded_metadata
        return t("Offloaded(") + fmt.uri(meta.uri) + t(f", {meta.size_bytes} bytes)")
    return t("(empty literal)")


def render_literal_map(lm: literals_pb2.LiteralMap, fmt: Formatter = PLAIN) -> list[tuple[str, str]]:
    """(name, rendered value) pairs sorted by name (protobuf maps keep no order)."""
    return [(fmt.text(name), render_literal(lm.literals[name], fmt)) for name in sorted(lm.literals)]


def _map(entries, fmt: Formatter) -> str:
    t = fmt.text
    names = sorted(entries)
    parts = [t(repr(name) + ": ") + render_literal(entries[name], fmt) for name in names[:MAX_ITEMS]]
    if len(names) > MAX_ITEMS:
        parts.append(t(f"... {len(names) - MAX_ITEMS} more"))
    return t("{") + t(", ").join(parts) + t("}")


def _scalar(s: literals_pb2.Scalar, fmt: Formatter) -> str:
    t = fmt.text
    kind = s.WhichOneof("value")
    if kind == "primitive":
        return t(_primitive(s.primitive))
    if kind == "none_type":
        return t("None")
    if kind == "blob":
        name = _BLOB_KINDS.get(s.blob.metadata.type.dimensionality, "Blob")
        fmt_name = s.blob.metadata.type.format
        suffix = f", format={fmt_name!r})" if fmt_name else ")"
        folder = s.blob.metadata.type.dimensionality == types_pb2.BlobType.MULTIPART
        return t(f"{name}(") + (fmt.folder if folder else fmt.uri)(s.blob.uri) + t(suffix)
    if kind == "structured_dataset":
        sd_format = s.structured_dataset.metadata.structured_dataset_type.format
        suffix = f", format={sd_format!r})" if sd_format else ")"
        return t("StructuredDataset(") + fmt.folder(s.structured_dataset.uri) + t(suffix)
    if kind == "schema":
        return t("Schema(") + fmt.folder(s.schema.uri) + t(")")
    if kind == "generic":
        return t(json.dumps(MessageToDict(s.generic), indent=2, sort_keys=True))
    if kind == "binary":
        return t(_binary(s.binary))
    if kind == "union":
        return render_literal(s.union.value, fmt)
    if kind == "error":
        return t(f"Error(from node {s.error.failed_node_id!r}: {s.error.message})")
    return t("(empty scalar)")


def _primitive(p: literals_pb2.Primitive) -> str:
    kind = p.WhichOneof("value")
    if kind == "integer":
        return str(p.integer)
    if kind == "float_value":
        return repr(p.float_value)
    if kind == "string_value":
        return repr(p.string_value)
    if kind == "boolean":
        return repr(p.boolean)
    if kind == "datetime":
        return p.datetime.ToJsonString()
    if kind == "duration":
        return str(p.duration.ToTimedelta())
    return "(empty primitive)"


def _binary(b: literals_pb2.Binary) -> str:
    if b.tag == "msgpack":
        # flytekit encodes dataclasses, pydantic models and dicts this way; show them as JSON.
        try:
            import msgpack

            return json.dumps(msgpack.unpackb(b.value, strict_map_key=False), indent=2, sort_keys=True, default=str)
        except Exception:  # noqa: BLE001 - undecodable data is shown by size, never breaks the page
            pass
    return f"Binary({len(b.value)} bytes, tag={b.tag!r})"
