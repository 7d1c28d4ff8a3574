"""Flyte 2's data proxy: uploads of code bundles (a signed PUT, as for Flyte 1's DataProxyService, whose
message flyteidl2's repeats field for field), a run's inputs, an action's inputs and outputs, signed links to an
attempt's report and code bundle, and the log of an action's attempt, followed while the attempt runs. ClusterService has one cluster to offer: this server (an
empty endpoint tells the SDK to use the one it calls)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

from connectrpc.request import RequestContext
from flyteidl.service import dataproxy_pb2 as v1
from flyteidl2.cluster import payload_pb2 as cluster_pb2
from flyteidl2.common import run_pb2 as common_run_pb2
from flyteidl2.dataproxy import dataproxy_service_pb2 as pb
from flyteidl2.logs.dataplane import payload_pb2 as logs_pb2
from flyteidl2.task import common_pb2
from starlette.concurrency import run_in_threadpool

from flytelite.admin.entity_common import validate_project_domain
from flytelite.context import Context, ExecutionKey
from flytelite.errors import InvalidArgument, NotFound, Unimplemented
from flytelite.idl.enums import enum_name
from flytelite.logs import resolve_log
from flytelite.runs import store
from flytelite.store.models import Action

# Lines of a log sent in one TailLogsResponse.
LINES_PER_MESSAGE = 500


class ClusterService:
    async def select_cluster(self, request: cluster_pb2.SelectClusterRequest,
                             ctx: RequestContext) -> cluster_pb2.SelectClusterResponse:
        return cluster_pb2.SelectClusterResponse()


class DataProxyService:
    def __init__(self, ctx: Context, v1_dataproxy):
        """`v1_dataproxy`: Flyte 1's DataProxyService servicer (admin/dataproxy.py), whose uploads these are."""
        self.ctx, self.v1 = ctx, v1_dataproxy

    async def create_upload_location(self, request: pb.CreateUploadLocationRequest,
                                     ctx: RequestContext) -> pb.CreateUploadLocationResponse:
        v1_request = v1.CreateUploadLocationRequest.FromString(request.SerializeToString())
        answer = await run_in_threadpool(self.v1.CreateUploadLocation, v1_request, None)
        return pb.CreateUploadLocationResponse.FromString(answer.SerializeToString())

    async def upload_inputs(self, request: pb.UploadInputsRequest, ctx: RequestContext) -> pb.UploadInputsResponse:
        return await run_in_threadpool(self._upload_inputs, request)

    def _upload_inputs(self, request: pb.UploadInputsRequest) -> pb.UploadInputsResponse:
        which = request.WhichOneof("id")
        if which == "run_id":
            project, domain = request.run_id.project, request.run_id.domain
        elif which == "project_id":
            project, domain = request.project_id.name, request.project_id.domain
        else:
            raise InvalidArgument("UploadInputs needs run_id or project_id (the project and domain of the run)")
        with self.ctx.db.session() as session:
            validate_project_domain(session, project, domain)
        data = request.inputs.SerializeToString()
        digest = hashlib.sha256(data).hexdigest()
        uri = self.ctx.blobs.join(self.ctx.blobs.uploads_prefix(), project, domain, "offloaded-inputs", digest,
                                  "inputs.pb")
        self.ctx.blobs.write_bytes(uri, data)
        return pb.UploadInputsResponse(offloaded_input_data=common_run_pb2.OffloadedInputData(
            uri=uri, inputs_hash=digest))

    async def get_action_data(self, request: pb.GetActionDataRequest, ctx: RequestContext) -> pb.GetActionDataResponse:
        return await run_in_threadpool(self._action_data, request)

    def _action_data(self, request: pb.GetActionDataRequest) -> pb.GetActionDataResponse:
        aid = request.action_id
        key = ExecutionKey(aid.run.project, aid.run.domain, aid.run.name)
        row = store.get(self.ctx, key, aid.name)
        spec = store.spec(row)
        found = pb.GetActionDataResponse(inputs_uri=spec.input_uri)
        inputs = self.ctx.blobs.read_proto_if_exists(spec.input_uri, common_pb2.Inputs) if spec.input_uri else None
        if inputs is not None:
            found.inputs.CopyFrom(inputs)
        if row.output_uri:
            found.outputs_uri = self.ctx.blobs.join(row.output_uri, "outputs.pb")
            outputs = self.ctx.blobs.read_proto_if_exists(found.outputs_uri, common_pb2.Outputs)
            if outputs is not None:
                found.outputs.CopyFrom(outputs)
        return found

    async def create_download_link(self, request: pb.CreateDownloadLinkRequest,
                                   ctx: RequestContext) -> pb.CreateDownloadLinkResponse:
        return await run_in_threadpool(self._download_link, request)

    def _download_link(self, request: pb.CreateDownloadLinkRequest) -> pb.CreateDownloadLinkResponse:
        source = request.WhichOneof("source")
        if source != "action_attempt_id":
            raise Unimplemented(f"links to the artifacts of a {source or 'missing source'} are not served; name an "
                                "action's attempt (action_attempt_id)")
        attempt = request.action_attempt_id
        aid = attempt.action_id
        key = ExecutionKey(aid.run.project, aid.run.domain, aid.run.name)
        row = store.get(self.ctx, key, aid.name)
        if not 1 <= attempt.attempt <= max(row.attempts, 1):
            raise InvalidArgument(f"action {aid.name} of run {key[2]} has attempts 1 to {row.attempts}, not "
                                  f"{attempt.attempt}")
        if request.artifact_type == pb.ARTIFACT_TYPE_REPORT:
            uri = self.ctx.blobs.join(store.attempt_prefix(self.ctx, key, aid.name, attempt.attempt), "report.html")
            if not self.ctx.blobs.exists(uri):
                raise NotFound(f"attempt {attempt.attempt} of action {aid.name} in run {key[2]} has no report "
                               "(a task with report=True writes one with flyte.report)")
        elif request.artifact_type == pb.ARTIFACT_TYPE_CODE_BUNDLE:
            uri = store.code_bundle(store.spec(row).task.spec.task_template)
            if not uri:
                raise NotFound(f"action {aid.name} of run {key[2]} runs no code bundle")
        else:
            raise InvalidArgument(f"CreateDownloadLink serves ARTIFACT_TYPE_REPORT and ARTIFACT_TYPE_CODE_BUNDLE, "
                                  f"not {enum_name(pb.ArtifactType, request.artifact_type)}")
        signed, expires_at = self.v1.download_link(uri, request, "CreateDownloadLink")
        return pb.CreateDownloadLinkResponse(pre_signed_urls=pb.PreSignedURLs(signed_url=[signed],
                                                                             expires_at=expires_at))

    async def tail_logs(self, request: pb.TailLogsRequest, ctx: RequestContext) -> AsyncIterator[pb.TailLogsResponse]:
        """The attempt's log (the latest attempt's when none is asked), then what it adds until the attempt ends."""
        aid = request.action_id
        key = ExecutionKey(aid.run.project, aid.run.domain, aid.run.name)
        row = await run_in_threadpool(store.get, self.ctx, key, aid.name)
        attempt = request.attempt or row.attempts
        path = self._log_file(row, attempt)
        if path is None:
            raise NotFound(f"action {aid.name} of run {key[2]} has no log for attempt {attempt} (yet)")
        offset, pending = 0, b""
        async with self.ctx.run_updates.watching(key) as watch:
            while True:
                row = await run_in_threadpool(store.get, self.ctx, key, aid.name)
                running = not row.done and row.attempts == attempt
                data = await run_in_threadpool(_read_from, path, offset)
                offset += len(data)
                text = pending + data
                if running:  # a line still being written waits for its end
                    complete, _, pending = text.rpartition(b"\n")
                    lines = complete.split(b"\n") if complete else []
                else:
                    lines, pending = text.splitlines(), b""
                for start in range(0, len(lines), LINES_PER_MESSAGE):
                    batch = [logs_pb2.LogLine(message=line.decode(errors="replace"),
                                              originator=logs_pb2.LogLineOriginator.USER)
                             for line in lines[start:start + LINES_PER_MESSAGE]]
                    yield pb.TailLogsResponse(logs=[pb.TailLogsResponse.Logs(lines=batch)])
                if not running or not await watch.changed():
                    return

    def _log_file(self, row: Action, attempt: int) -> Path | None:
        """The log file of an attempt of the action, from the links the engine recorded for it."""
        state = json.loads(row.state_json or "{}")
        links = next((r.get("logs", []) for r in state.get("ended", []) if r.get("attempt") == attempt), None)
        if links is None and row.attempts == attempt:
            links = state.get("logs", [])
        marker = "/logs/"
        for link in links or []:
            uri = link.get("uri", "")
            if marker in uri:
                return resolve_log(self.ctx.config.logs_dir, uri.split(marker, 1)[1])
        return None


def _read_from(path: Path, offset: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read()
