"""With `engine.state: kubernetes`, every execution is also a FlyteWorkflow object in its namespace.

The engine's state stays in the database (the leases, the rounds and recovery read it there); this
mirror keeps one `flyteworkflows.flyte.lyft.com` object per execution in step with it, so
`kubectl get flyteworkflows` shows executions and their phases as on a Flyte cluster. It installs the
CRD when missing, creates an execution's object at its first persisted round and patches its status at
each later one. It works from a thread of its own: rounds never wait on the apiserver, and when several
rounds of one execution pile up only the latest status is written. Objects of finished executions are
labelled `termination-status: terminated` as FlytePropeller labels them, so a FlytePropeller watching
the same cluster leaves them alone.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timezone

from flyteidl.admin import workflow_pb2 as admin_workflow_pb2
from flyteidl.core import literals_pb2
from google.protobuf.json_format import MessageToDict
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from flytelite.context import Context, ExecutionKey
from flytelite.kubeclient import Namespaces, core_api
from flytelite.plugins.kubernetes.names import namespace as namespace_for
from flytelite.propeller.crd import flyteworkflow as fw
from flytelite.propeller.phases import WORKFLOW_DONE
from flytelite.propeller.status import WorkflowStatus
from flytelite.propeller.workflow import ExecutableWorkflow
from flytelite.store.flyteworkflow import ExecutionSpec

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "flyte.lyft.com", "v1alpha1", "flyteworkflows"


class FlyteWorkflowMirror:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.cfg = ctx.config.kubernetes
        api = core_api(self.cfg).api_client
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.extensions = client.ApiextensionsV1Api(api)
        self._pending: dict[ExecutionKey, tuple[ExecutableWorkflow, ExecutionSpec, str]] = {}
        self._created: set[ExecutionKey] = set()
        self.namespaces = Namespaces(self.core)
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._install_crd()
        self._thread = threading.Thread(target=self._run, name="flyteworkflow-mirror", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Write what is pending, then stop."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def persisted(self, key: ExecutionKey, workflow: ExecutableWorkflow, spec: ExecutionSpec,
                  status_json: str) -> None:
        """The engine persisted this status (its JSON) of the execution; called from a round, returns at once."""
        with self._wake:
            self._pending[key] = (workflow, spec, status_json)
            self._wake.notify()

    # -- the writer's thread -----------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                batch, self._pending = self._pending, {}
                stopping = self._stopping
            for key, (workflow, spec, status_json) in batch.items():
                try:
                    self._write(key, workflow, spec, WorkflowStatus.from_json(status_json))
                except Exception:  # noqa: BLE001 - a mirror must never stop the engine; the next round retries
                    log.exception("writing the FlyteWorkflow object of execution %s failed", "/".join(key))
            if stopping:
                return

    def _write(self, key: ExecutionKey, workflow: ExecutableWorkflow, spec: ExecutionSpec,
               status: WorkflowStatus) -> None:
        namespace = namespace_for(self.cfg.namespace_template, key[0], key[1])
        patch = {"metadata": {"labels": self._labels(status)}, "status": fw.status_json(status)}
        if key not in self._created:
            self.namespaces.ensure(namespace)
            body = self._new_object(namespace, workflow, spec)
            body["metadata"]["labels"].update(patch["metadata"]["labels"])
            body["status"] = patch["status"]
            try:
                self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
                self._created.add(key)
                return
            except ApiException as e:
                if e.status != 409:  # created before (a restart, another replica)
                    raise
            self._created.add(key)
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, key[2], patch)

    def _labels(self, status: WorkflowStatus) -> dict:
        labels = {"flytelite.io/phase": fw.phase_label(status)}
        if status.phase in WORKFLOW_DONE:
            labels["termination-status"] = "terminated"
            labels["completed-time"] = datetime.now(timezone.utc).strftime("%Y-%m-%d.%H")
        return labels

    def _new_object(self, namespace: str, workflow: ExecutableWorkflow, spec: ExecutionSpec) -> dict:
        literals = self.ctx.blobs.read_proto_if_exists(spec.inputs_uri, literals_pb2.LiteralMap)
        inputs = MessageToDict(literals) if literals is not None else None
        body = fw.flyte_workflow(namespace, workflow.closure, spec, inputs)
        if len(json.dumps(body)) > fw.MAX_INLINE_BYTES:
            body = fw.flyte_workflow(namespace, workflow.closure, spec, inputs, self._offload(workflow))
        return body

    def _offload(self, workflow: ExecutableWorkflow) -> str:
        """The closure in the blob store where FlyteAdmin keeps it (metadata/admin/<p>/<d>/<name>/<version>)."""
        wid = workflow.id
        blobs = self.ctx.blobs
        uri = blobs.join(blobs.root, "metadata", "admin", wid.project, wid.domain, wid.name, wid.version)
        if not blobs.exists(uri):
            blobs.write_proto(uri, admin_workflow_pb2.WorkflowClosure(compiled_workflow=workflow.closure))
        return uri

    def _install_crd(self) -> None:
        try:
            self.extensions.create_custom_resource_definition(fw.CRD)
        except ApiException as e:
            if e.status != 409:
                raise
        else:
            log.info("installed the FlyteWorkflow CRD (flyteworkflows.flyte.lyft.com)")
