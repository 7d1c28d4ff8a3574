"""Execution data in the blob store: input/output LiteralMaps for the Get*Data RPCs and inline event data.

Responses carry the LiteralMap inline when it is small and always a UrlBlob naming it and its size
(flytekit reads `full_*` first, then downloads the url). A blob that cannot be read yields an empty
map, never a failed request.
"""

from __future__ import annotations

import logging

from flyteidl.admin import common_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import literals_pb2

from flytelite.admin.dataproxy import signed_blobs
from flytelite.context import Context
from flytelite.storage.links import BlobLinks, blob_links

log = logging.getLogger(__name__)


class ExecutionData:
    """Inputs and outputs for the Get*Data RPCs, following FlyteAdmin's util.GetInputs / GetOutputs
    (flyteadmin/pkg/manager/impl/util/data.go) with signed URLs on: the UrlBlob always names the data and
    its size; the LiteralMap itself comes inline only below `remote_data.max_size_bytes`, so a 50 MB input
    never has to fit into one gRPC reply (flytekit reads at most 20 MiB). FlyteRemote fetches the link."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._links: BlobLinks | None = None

    @property
    def links(self) -> BlobLinks:
        if self._links is None:
            self._links = blob_links(self.ctx.blobs, signed_blobs(self.ctx), lambda: self.ctx.public_url)
        return self._links

    def inputs(self, uri: str) -> tuple[literals_pb2.LiteralMap, common_pb2.UrlBlob]:
        """The LiteralMap stored at `uri` (inline when small enough) and its UrlBlob; empty when there is none."""
        if not uri:
            return literals_pb2.LiteralMap(), common_pb2.UrlBlob()
        try:
            size = self.ctx.blobs.size(uri)
            if self._inline(size):
                data = self.ctx.blobs.read_bytes(uri)
                return literals_pb2.LiteralMap.FromString(data), common_pb2.UrlBlob(url=uri, bytes=len(data))
            return literals_pb2.LiteralMap(), common_pb2.UrlBlob(url=self._link(uri), bytes=size)
        except FileNotFoundError:
            return literals_pb2.LiteralMap(), common_pb2.UrlBlob()
        except OSError as exc:
            log.warning("cannot read %s: %s", uri, exc)
            return literals_pb2.LiteralMap(), common_pb2.UrlBlob()

    def outputs(self, inline: literals_pb2.LiteralMap | None, uri: str
                ) -> tuple[literals_pb2.LiteralMap, common_pb2.UrlBlob]:
        """Outputs an event carried inline (`inline`, kept only when small enough, as FlyteAdmin does) or
        stored at `uri`."""
        if inline is not None:
            return (inline if self._inline(inline.ByteSize()) else literals_pb2.LiteralMap()), common_pb2.UrlBlob()
        return self.inputs(uri)

    def _inline(self, size: int) -> bool:
        limit = self.ctx.config.remote_data.max_size_bytes
        return limit == 0 or size < limit

    def _link(self, uri: str) -> str:
        seconds = self.ctx.config.remote_data.signed_url_seconds
        return self.links.download(uri, self.ctx.clock.now().timestamp(), seconds)


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
