"""DataProxyService: signed URLs for uploading and downloading blobs.

`pyflyte run --remote` and `pyflyte register` ask CreateUploadLocation first and
PUT their code tarball to the returned `signed_url`; `native_url` is where it
lands in the blob store. Uploads go to `<uploads>/<project>/<domain>/<root>/<filename>`
where `<root>` is `filename_root` or the base32 MD5 of the content, as in
FlyteAdmin. This module only signs (storage/links.py): on a local store the URLs
are flytelite's own and flytelite.console.transfer moves the bytes; on S3 they are
the bucket's presigned URLs. GetData resolves the `flyte://v1/...` URIs the Get*Data RPCs hand out (and the
console offers to copy) to the inputs or outputs of a node or of one attempt, a single variable of them, or
the node's deck as a link, as FlyteAdmin resolves them.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import secrets
import string

from flyteidl.admin import node_execution_pb2, task_execution_pb2
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.service import dataproxy_pb2, dataproxy_pb2_grpc
from google.protobuf import timestamp_pb2
from sqlalchemy import select

from flytelite.admin.grpc_errors import fill_unimplemented
from flytelite.context import Context
from flytelite.errors import AlreadyExists, InvalidArgument, NotFound
from flytelite.idl.enums import enum_name
from flytelite.storage.links import BlobLinks, blob_links
from flytelite.storage.signing import SignedBlobs, UrlSigner, load_or_create_secret, safe_relative_path
from flytelite.store import executions as repo
from flytelite.store.models import NodeExecution, TaskExecution

# FlyteAdmin's default length for generated upload file names.
_RANDOM_NAME_LENGTH = 20
_NAME_CHARS = string.ascii_lowercase + string.digits
# FlyteAdmin's flyte:// URIs: a node's (or with an attempt, a task execution's) inputs, outputs or deck, and
# optionally one variable of the inputs or outputs.
_PART = r"[a-zA-Z0-9_-]+"
_FLYTE_URL = re.compile(rf"flyte://v1/(?P<project>{_PART})/(?P<domain>{_PART})/(?P<execution>{_PART})/"
                        rf"(?P<node>{_PART})(?:/(?P<attempt>[0-9]+))?/(?:(?P<io>[iod])|(?P<io_var>[io])/"
                        rf"(?P<name>{_PART}))$")


def signed_blobs(ctx: Context) -> SignedBlobs:
    """The signer every HTTP and gRPC handler of this server shares (same secret file under home)."""
    return SignedBlobs(ctx.blobs, UrlSigner(load_or_create_secret(ctx.config.home)))


class DataProxyService(dataproxy_pb2_grpc.DataProxyServiceServicer):
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.links: BlobLinks = blob_links(ctx.blobs, signed_blobs(ctx), lambda: ctx.public_url)

    def _lifetime(self, request, what: str) -> int:
        """Seconds a URL stays valid: the client's expires_in, capped by config.upload_url_seconds."""
        limit = self.ctx.config.upload_url_seconds
        if not request.HasField("expires_in"):
            return limit
        # From the fields, not ToTimedelta(): a Duration off the wire may lie beyond what timedelta holds.
        seconds = request.expires_in.seconds + request.expires_in.nanos / 1e9
        if seconds < 0 or seconds > limit:
            raise InvalidArgument(f"{what}: expires_in {seconds:g}s must lie between 0 and {limit}s "
                                  "(upload_url_seconds in flytelite's config)")
        return math.ceil(seconds) or limit


    def CreateUploadLocation(self, request: dataproxy_pb2.CreateUploadLocationRequest, context):
        if not request.project or not request.domain:
            raise InvalidArgument("CreateUploadLocation needs both project and domain, got "
                                  f"project={request.project!r} domain={request.domain!r}")
        if not request.content_md5 and not request.filename_root:
            raise InvalidArgument("CreateUploadLocation needs content_md5 (the MD5 digest of the file) or "
                                  "filename_root (a folder name for the upload); got neither")
        if request.content_md5 and len(request.content_md5) != 16:
            raise InvalidArgument(f"content_md5 must be the 16-byte MD5 digest of the file, got "
                                  f"{len(request.content_md5)} bytes")
        md5_b64 = base64.b64encode(request.content_md5).decode() if request.content_md5 else ""
        root = request.filename_root or base64.b32encode(request.content_md5).decode()
        filename = request.filename or "".join(secrets.choice(_NAME_CHARS) for _ in range(_RANDOM_NAME_LENGTH))
        relative = safe_relative_path(f"{request.project}/{request.domain}/{root}/{filename}")
        native_url = self.ctx.blobs.join(self.ctx.blobs.uploads_prefix(), relative)
        if request.filename and request.filename_root:
            # A caller-chosen name may exist already: rewriting it is allowed only with the same content.
            self._refuse_different_content(native_url, request.content_md5)

        seconds = self._lifetime(request, "CreateUploadLocation")
        now = self.ctx.clock.now().timestamp()
        response = dataproxy_pb2.CreateUploadLocationResponse(
            signed_url=self.links.upload(native_url, now, seconds, md5_b64),
            native_url=native_url,
            expires_at=_timestamp(math.ceil(now) + seconds),
        )
        if md5_b64:
            response.headers["Content-MD5"] = md5_b64
        return response

    def _refuse_different_content(self, path: str, content_md5: bytes) -> None:
        blobs = self.ctx.blobs
        if not blobs.exists(path):
            return
        if not content_md5:
            raise AlreadyExists(f"file already exists at {path}; pass content_md5 of the same content to "
                                "upload it again, or choose another filename_root")
        digest = hashlib.md5()
        with blobs.fs.open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        if digest.digest() != content_md5:
            raise AlreadyExists(f"file already exists at {path} with different content; choose another "
                                "filename_root or filename")

    def CreateDownloadLocation(self, request: dataproxy_pb2.CreateDownloadLocationRequest, context):
        signed_url, expires_at = self._download(request.native_url, self._lifetime(request, "CreateDownloadLocation"))
        return dataproxy_pb2.CreateDownloadLocationResponse(signed_url=signed_url, expires_at=expires_at)

    def CreateDownloadLink(self, request: dataproxy_pb2.CreateDownloadLinkRequest, context):
        if request.artifact_type != dataproxy_pb2.ARTIFACT_TYPE_DECK:
            raise InvalidArgument("CreateDownloadLink supports artifact_type ARTIFACT_TYPE_DECK only, got "
                                  f"{enum_name(dataproxy_pb2.ArtifactType, request.artifact_type)}")
        if not request.HasField("node_execution_id"):
            raise InvalidArgument("CreateDownloadLink needs node_execution_id")
        node_uri = self._deck_uri(request.node_execution_id)
        if not self.ctx.blobs.exists(node_uri):
            raise NotFound(f"the deck {node_uri} does not exist yet; if the task renders its deck while "
                           "running, try again once it has called persist()")
        signed_url, expires_at = self._download(node_uri, self._lifetime(request, "CreateDownloadLink"))
        urls = dataproxy_pb2.PreSignedURLs(signed_url=[signed_url], expires_at=expires_at)
        return dataproxy_pb2.CreateDownloadLinkResponse(signed_url=[signed_url], expires_at=expires_at,
                                                        pre_signed_urls=urls)

    def GetData(self, request: dataproxy_pb2.GetDataRequest, context):
        match = _FLYTE_URL.match(request.flyte_url)
        if match is None:
            raise InvalidArgument(f"failed to parse artifact url {request.flyte_url!r}: expected "
                                  "flyte://v1/<project>/<domain>/<execution>/<node>[/<attempt>]/<i|o|d>[/<name>], "
                                  "as the node and task execution data's flyte_urls give")
        io, name = match["io"] or match["io_var"], match["name"] or ""
        node = idpb.NodeExecutionIdentifier(node_id=match["node"], execution_id=idpb.WorkflowExecutionIdentifier(
            project=match["project"], domain=match["domain"], name=match["execution"]))
        if io == "d":
            if match["attempt"] is not None:
                raise InvalidArgument("deck type cannot be specified with a retry attempt, just use the node instead")
            link = self.CreateDownloadLink(dataproxy_pb2.CreateDownloadLinkRequest(
                artifact_type=dataproxy_pb2.ARTIFACT_TYPE_DECK, node_execution_id=node), context)
            return dataproxy_pb2.GetDataResponse(pre_signed_urls=link.pre_signed_urls)
        what, row, closure = self._data_row(node, match["attempt"])
        from flytelite.admin.exec_data import ExecutionData

        data = ExecutionData(self.ctx)
        if io == "i":
            literals, _ = data.inputs(row.input_uri)
        else:
            literals, _ = data.outputs(closure.output_data if closure.HasField("output_data") else None,
                                       closure.output_uri)
        if not name:
            return dataproxy_pb2.GetDataResponse(literal_map=literals)
        if name not in literals.literals:
            raise InvalidArgument(f"name [{name}] not found in {what}; it has "
                                  f"{', '.join(sorted(literals.literals)) or 'no variables'}")
        return dataproxy_pb2.GetDataResponse(literal=literals.literals[name])

    def _data_row(self, node: idpb.NodeExecutionIdentifier, attempt: str | None
                  ) -> tuple[str, NodeExecution | TaskExecution, node_execution_pb2.NodeExecutionClosure
                             | task_execution_pb2.TaskExecutionClosure]:
        """The node execution, or its task execution of that retry attempt, whose data a URI names."""
        ex = node.execution_id
        described = f"node execution {node.node_id} of execution {ex.project}/{ex.domain}/{ex.name}"
        with self.ctx.db.session() as session:
            if attempt is None:
                row = repo.get_node_execution(session, node)
                return described, row, node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
            task_row = session.scalars(select(TaskExecution).where(
                TaskExecution.project == ex.project, TaskExecution.domain == ex.domain,
                TaskExecution.execution_name == ex.name, TaskExecution.node_id == node.node_id,
                TaskExecution.retry_attempt == int(attempt)).order_by(TaskExecution.id.desc())).first()
        if task_row is None:
            raise NotFound(f"{described} has no task execution of attempt {attempt}; list the node's task "
                           "executions to see its attempts")
        return (f"attempt {attempt} of {described}", task_row,
                task_execution_pb2.TaskExecutionClosure.FromString(task_row.closure_pb))

    def _deck_uri(self, node_id) -> str:
        ex = node_id.execution_id
        with self.ctx.db.session() as session:
            row = session.scalars(select(NodeExecution).where(
                NodeExecution.project == ex.project, NodeExecution.domain == ex.domain,
                NodeExecution.execution_name == ex.name, NodeExecution.node_id == node_id.node_id)).first()
        if row is None:
            raise NotFound(f"node execution {node_id.node_id} of execution {ex.project}/{ex.domain}/{ex.name} "
                           "does not exist")
        closure = node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
        if not closure.deck_uri:
            raise NotFound(f"node execution {node_id.node_id} of execution {ex.project}/{ex.domain}/{ex.name} "
                           "has no deck (enable_deck=True on the task makes one)")
        return closure.deck_uri

    def download_link(self, native_url: str, request, rpc: str) -> tuple[str, timestamp_pb2.Timestamp]:
        """A signed URL to read `native_url` and when it expires, for as long as `request.expires_in` asks
        (`rpc` names the call in errors); Flyte 2's data proxy signs through it."""
        return self._download(native_url, self._lifetime(request, rpc))

    def _download(self, native_url: str, seconds: int) -> tuple[str, timestamp_pb2.Timestamp]:
        if not native_url:
            raise InvalidArgument("native_url is empty: pass the blob path to download")
        now = self.ctx.clock.now().timestamp()
        return self.links.download(native_url, now, seconds), _timestamp(math.ceil(now) + seconds)


def _timestamp(unix_seconds: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromSeconds(unix_seconds)
    return ts


fill_unimplemented(DataProxyService, dataproxy_pb2_grpc.DataProxyServiceServicer)
