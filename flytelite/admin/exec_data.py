"""Execution data in the blob store: input/output LiteralMaps for the Get*Data RPCs and inline event data.

Responses carry the full LiteralMap and a UrlBlob naming the blob and its size,
as FlyteAdmin does with a local store (flytekit reads `full_*` first, then the
url). A blob that cannot be read yields an empty map, never a failed request.
"""

from __future__ import annotations

import logging

from flyteidl.admin import common_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2

from flytelite.context import Context

log = logging.getLogger(__name__)


def literal_map_data(ctx: Context, uri: str) -> tuple[literals_pb2.LiteralMap, common_pb2.UrlBlob]:
    """The LiteralMap stored at `uri` and its UrlBlob; both empty when there is no uri (yet)."""
    if not uri:
        return literals_pb2.LiteralMap(), common_pb2.UrlBlob()
    try:
        data = ctx.blobs.read_bytes(uri)
    except FileNotFoundError:
        return literals_pb2.LiteralMap(), common_pb2.UrlBlob()
    except OSError as exc:
        log.warning("cannot read %s: %s", uri, exc)
        return literals_pb2.LiteralMap(), common_pb2.UrlBlob()
    return literals_pb2.LiteralMap.FromString(data), common_pb2.UrlBlob(url=uri, bytes=len(data))


def offload_literal_map(ctx: Context, execution: idpb.WorkflowExecutionIdentifier, name: str,
                        literals: literals_pb2.LiteralMap, *parts: str) -> str:
    """Write an event's inline LiteralMap beside the execution's data; returns its uri."""
    exec_dir = ctx.blobs.execution_dir(execution.project, execution.domain, execution.name)
    uri = ctx.blobs.join(exec_dir, "admin", *parts, name)
    ctx.blobs.write_proto(uri, literals)
    return uri


def node_flyte_urls(ident: idpb.NodeExecutionIdentifier, has_deck: bool) -> common_pb2.FlyteURLs:
    ex = ident.execution_id
    return _flyte_urls(f"flyte://v1/{ex.project}/{ex.domain}/{ex.name}/{ident.node_id}", has_deck)


def task_flyte_urls(ident: idpb.TaskExecutionIdentifier) -> common_pb2.FlyteURLs:
    node = ident.node_execution_id
    ex = node.execution_id
    return _flyte_urls(f"flyte://v1/{ex.project}/{ex.domain}/{ex.name}/{node.node_id}/{ident.retry_attempt}",
                       False)


def _flyte_urls(base: str, has_deck: bool) -> common_pb2.FlyteURLs:
    return common_pb2.FlyteURLs(inputs=f"{base}/i", outputs=f"{base}/o", deck=f"{base}/d" if has_deck else "")
