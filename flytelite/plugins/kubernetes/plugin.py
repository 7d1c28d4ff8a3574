"""The kubernetes task plugin: each attempt of a task runs as a pod (FlytePropeller's pod plugin under its
k8s plugin manager).

An attempt creates its pod once, under a name derived from the execution, node and attempt: a round
that creates it again (a restart, another replica taking over) meets AlreadyExists and goes on with
the pod that is there. The pod informer's changes wake the owning execution; rounds read the pod from
its cache and map its status to a phase (phases.py). A pod that succeeded is judged by the files the
task wrote (outputs.pb, error.pb, futures.pb). Abort deletes the pod; finalize deletes finished pods
unless configured to keep them. At most `kubernetes.max_pods_in_flight` pods are unfinished at once.

The plugins of the compute task types on Kubernetes are this one with another object or another pod: they
change the hooks under "what a plugin for another kind of object changes" (spark.py, resource.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from flyteidl.core import execution_pb2
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from flytelite.context import Context
from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.kubeclient import MANAGED_LABEL, NamespacedSecret, Namespaces, core_api
from flytelite.plugins.kubernetes import copilot, names, phases, pods
from flytelite.plugins.kubernetes.informer import Informer, PodKey, pod_informer
from flytelite.plugins.machinery.core import (
    Plugin,
    PluginPhase,
    PluginPhaseInfo,
    PluginState,
    TaskExecutionContext,
)
from flytelite.plugins.machinery.environment import flyte_task_env
from flytelite.plugins.machinery.results import written_result
from flytelite.plugins.machinery.task_site import FOLDER as TASK_SITE
from flytelite.plugins.machinery.task_site import task_process_env
from flytelite.plugins.machinery.template import TemplateError, rendered_command

log = logging.getLogger(__name__)

# How long a round waits for the informer's first list before reading pods from the apiserver itself.
SYNC_SECONDS = 10.0
# How often an attempt waiting for room under max_pods_in_flight looks again (a pod ending also wakes it).
ROOM_POLL_SECONDS = 2.0
# How soon an attempt whose pod the apiserver could not create yet tries again.
RETRY_CREATE_SECONDS = 1.0
_PHASES = {"queued": PluginPhase.QUEUED, "initializing": PluginPhase.INITIALIZING, "running": PluginPhase.RUNNING}



class PodStatus(str, Enum):
    CREATED = "created"  # the pod (or the attempt's other object) was created (or found created): watch it
    DONE = "done"        # it finished, was lost or the attempt aborted: the fields below decide the result


@dataclass
class PodState(PluginState):
    """What the plugin remembers of one attempt's pod (persisted by the engine; see PluginState)."""

    status: PodStatus | None = None
    namespace: str = ""
    pod: str = ""
    # The container whose end is the task's end, unless the whole pod must finish (copilot's sidecar).
    primary: str = ""
    whole_pod: bool = False
    output_prefix: str = ""
    # Gone before it finished (deleted by someone else).
    lost: bool = False
    # [code, message, error kind, retryable] of a failed pod or an aborted attempt.
    failure: list[Any] | None = None
    # Deleted once finished (kubernetes.delete_finished_pods).
    deleted: bool = False

    def __post_init__(self) -> None:
        if self.status is not None:
            self.status = PodStatus(self.status)

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.pod)

class KubernetesPlugin(Plugin):
    id = "container"  # FlytePropeller's id for the pod plugin running python-task and container tasks
    task_types: tuple[str, ...] = ("python-task", "container", "sqlite", "raw-container", "sidecar")
    is_default = True  # as FlytePropeller's pod plugin: task types without a plugin of their own run as pods
    kind = "pod"  # what an attempt creates, in messages
    # Watch from the server's start (the pods in flight count against max_pods_in_flight), or from the first
    # attempt (a kind no attempt may ever use).
    watch_from_start = True

    def __init__(self, ctx: Context, api: client.CoreV1Api | None = None):
        self.ctx = ctx
        self.cfg = ctx.config.kubernetes
        self.api = api or core_api(self.cfg)
        self.informer = self._new_informer()
        self._lock = threading.Lock()
        # Who to wake when a pod changes: the execution of each pod an attempt is waiting on.
        self._wakes: dict[PodKey, Callable[[float | None], None]] = {}
        # Pods created and not yet seen finished (the max_pods_in_flight count).
        self._in_flight: set[PodKey] = set()
        # Attempts waiting for room under max_pods_in_flight, by pod name: woken when a pod finishes.
        self._waiting_for_room: dict[str, Callable[[float | None], None]] = {}
        self.namespaces = Namespaces(self.api, self.cfg.create_namespaces)
        # With authentication on, the task client's secret reaches pods through a Secret in their namespace
        # (Flyte's flyte-secret-auth), mounted where flytekit reads it, never in the pod's spec.
        tasks = ctx.auth.tasks if ctx.auth is not None else None
        self.client_secret = (NamespacedSecret(self.api, self.cfg.task_client_secret,
                                               lambda ns: {pods.CLIENT_SECRET_KEY: tasks.namespace_secret(ns)})
                              if tasks is not None else None)

    def setup(self, loop) -> None:
        if self.watch_from_start:
            self.informer.start()

    def close(self) -> None:
        self.informer.stop()

    # -- the attempt's life ------------------------------------------------------------------
    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        self.informer.start()
        st = PodState.load(tctx.state)
        try:
            return self._handle(tctx, st)
        finally:
            st.store(tctx.state)

    def _handle(self, tctx: TaskExecutionContext, st: PodState) -> PluginPhaseInfo:
        if st.status is None:
            return self._create(tctx, st)
        key = st.key
        with self._lock:
            self._wakes[key] = tctx.wake
        if st.status == PodStatus.DONE:
            return self._result(tctx, st)
        obj = self._read(key)
        if obj is None:
            st.status, st.lost = PodStatus.DONE, True
            return self._result(tctx, st)
        state = self._observe(obj, st)
        if not state.done:
            return PluginPhaseInfo(_PHASES[state.phase], reason=state.reason, logs=self._logs(key, obj))
        st.status = PodStatus.DONE
        if state.phase == "failed":
            st.failure = [state.code, state.reason, state.kind, state.retryable]
        with self._lock:
            self._in_flight.discard(key)
        return self._result(tctx, st)

    def _create(self, tctx: TaskExecutionContext, st: PodState) -> PluginPhaseInfo:
        cap = self.cfg.max_pods_in_flight
        with self._lock:
            if cap and len(self._in_flight) >= cap:
                self._waiting_for_room[names.pod_name(tctx.key, tctx.node_id, tctx.attempt)] = tctx.wake
                return PluginPhaseInfo(
                    PluginPhase.QUEUED, version=1, poll_after=ROOM_POLL_SECONDS,
                    reason=f"waiting for room: {len(self._in_flight)} pods are unfinished "
                           f"(kubernetes.max_pods_in_flight is {cap})")
        namespace = names.namespace(self.cfg.namespace_template, tctx.key[0], tctx.key[1])
        # A span of the round; the task's containers get its context as TRACEPARENT (flyte_task_env).
        with self.ctx.tracing.span("launch kubernetes object", attributes={"flyte.task": tctx.task.id.name}):
            try:
                obj = self._manifest(tctx, namespace)
            except TemplateError as e:
                return PluginPhaseInfo.failure(E.BAD_TASK_SPECIFICATION, f"task {tctx.task.id.name}: {e}",
                                               kind=USER, retryable=False)
            key = (namespace, obj["metadata"]["name"])
            try:
                self.namespaces.ensure(namespace)
                if self.client_secret is not None:
                    self.client_secret.ensure(namespace)
                self._create_object(namespace, obj)
            except ApiException as e:
                if e.status != 409:  # AlreadyExists: created by an earlier round, this replica's or another's
                    return self._create_failed(tctx, key, e)
        st.status, st.namespace, st.pod = PodStatus.CREATED, namespace, key[1]
        st.primary = obj["metadata"]["annotations"]["primary_container_name"]
        st.output_prefix, st.whole_pod = tctx.output_prefix, obj["kind"] == "Pod" and copilot.waits_for_whole_pod(obj)
        with self._lock:
            self._wakes[key] = tctx.wake
            self._in_flight.add(key)
        return PluginPhaseInfo(PluginPhase.QUEUED, reason="task submitted to K8s", logs=self._logs(key, obj))

    # -- what a plugin for another kind of object changes --------------------------------------
    def _manifest(self, tctx: TaskExecutionContext, namespace: str) -> dict:
        """The object the attempt creates (raises TemplateError for a task that cannot be one)."""
        return self._pod_manifest(tctx, namespace)

    def _create_object(self, namespace: str, obj: dict) -> None:
        self.api.create_namespaced_pod(namespace, obj)

    def _new_informer(self) -> Informer:
        return pod_informer(self.api, self._changed)

    def _fetch(self, key: PodKey):
        """The object from the apiserver (a raw response)."""
        return self.api.read_namespaced_pod(key[1], key[0], _preload_content=False)

    def _observe(self, obj: dict, st: PodState) -> phases.PodState:
        """The attempt's phase from its object."""
        return phases.pod_state(obj, st.primary, datetime.now(timezone.utc), self.cfg.image_pull_grace_seconds,
                                whole_pod=st.whole_pod)

    def _finished(self, obj: dict) -> bool:
        return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    def _create_failed(self, tctx: TaskExecutionContext, key: PodKey, e: ApiException) -> PluginPhaseInfo:
        """As FlytePropeller's plugin manager judges a refused create."""
        what = (f"creating {self.kind} {key[0]}/{key[1]} for task {tctx.task.id.name}: {e.status} {e.reason}: "
                f"{error_message(e)}")
        if e.status == 403:
            return PluginPhaseInfo.failure(E.RUNTIME_FAILURE, what, kind=USER, retryable=True)
        if e.status in (400, 422):
            return PluginPhaseInfo.failure(E.BAD_TASK_FORMAT, what, kind=USER, retryable=False)
        if e.status == 413:
            return PluginPhaseInfo.failure(E.ENTITY_TOO_LARGE, what, kind=USER, retryable=False)
        # Anything else (the apiserver busy, a new namespace's service account not ready yet): try again soon;
        # creating is idempotent by the pod's name.
        log.info("%s; trying again", what)
        return PluginPhaseInfo(PluginPhase.QUEUED, version=1, reason=what, poll_after=RETRY_CREATE_SECONDS)

    def _pod_manifest(self, tctx: TaskExecutionContext, namespace: str) -> pods.Pod:
        env = flyte_task_env(tctx, self.ctx, client_secret_file=pods.CLIENT_SECRET_FILE)
        mounts = list(self.cfg.host_mounts)
        if self.ctx.blobs.is_local:
            # A single-node cluster on this machine: the pod reads and writes the local store where it is,
            # and its Python processes get what makes local:// URIs work (plugins/task_site).
            mounts += [self.ctx.blobs.folder, TASK_SITE]
            env = task_process_env(env)
        template = None
        template_name = tctx.task.metadata.pod_template_name
        if template_name:
            try:
                template = self.api.read_namespaced_pod_template(template_name, namespace,
                                                                 _preload_content=False)
            except ApiException as e:
                if e.status == 404:
                    raise TemplateError(f"the pod template {template_name!r} does not exist in namespace "
                                        f"{namespace!r}") from None
                raise
            template = _json(template).get("template", {})
        pod = pods.build_pod(tctx, self.cfg, lambda words: rendered_command(tctx, words), env, namespace,
                             template, mounts, self.ctx.blobs.root)
        if self.client_secret is not None:
            pods.mount_client_secret(pod["spec"], self.cfg.task_client_secret)
        return pod

    def _read(self, key: PodKey) -> dict | None:
        """The attempt's object from the informer's cache; from the apiserver while the cache is not synced or
        lags (None: it is gone)."""
        obj = self.informer.get(key) if self.informer.wait_synced(SYNC_SECONDS) else None
        if obj is not None:
            return obj
        try:
            return _json(self._fetch(key))
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def _result(self, tctx: TaskExecutionContext, st: PodState) -> PluginPhaseInfo:
        key = st.key
        logs = self._logs(key)
        if st.lost:
            return PluginPhaseInfo.failure(
                E.RESOURCE_DELETED_EXTERNALLY, f"resource not found, name [{key[0]}/{key[1]}]: the {self.kind} was "
                "deleted before it finished", kind=SYSTEM, retryable=True, logs=logs)
        if st.failure:
            code, message, kind, retryable = st.failure
            return PluginPhaseInfo.failure(code, message, kind=kind, retryable=retryable, logs=logs)
        written = written_result(self.ctx.blobs, st.output_prefix, logs)
        if written is not None:
            return written
        if not len(tctx.task.interface.outputs.variables):
            return PluginPhaseInfo(PluginPhase.SUCCESS, logs=logs)
        return PluginPhaseInfo.failure(
            E.OUTPUTS_NOT_FOUND, f"{self.kind} {key[0]}/{key[1]} succeeded without writing outputs.pb or error.pb to "
            f"{st.output_prefix}", kind=SYSTEM, retryable=True, logs=logs)

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        """The attempt's log links (`obj`: its object, when the round has it)."""
        return self._pod_logs(key[0], [(key[1], "Kubernetes Logs (User)")])

    def _pod_logs(self, namespace: str, pods: list[tuple[str, str]]) -> list[execution_pb2.TaskLog]:
        """Links to the console's log of each (pod, link name)."""
        if not self.ctx.public_url:
            return []
        return [execution_pb2.TaskLog(uri=f"{self.ctx.public_url}/k8s/logs/{namespace}/{pod}", name=name)
                for pod, name in pods]

    def abort(self, tctx: TaskExecutionContext) -> None:
        st = PodState.load(tctx.state)
        if st.pod and st.status != PodStatus.DONE:
            self._delete(st.key)
        if st.status is not None:
            st.status = PodStatus.DONE
            st.failure = st.failure or [E.TASK_ABORTED, "aborted", USER, False]
            st.store(tctx.state)

    def finalize(self, tctx: TaskExecutionContext) -> None:
        st = PodState.load(tctx.state)
        if not st.pod or st.status != PodStatus.DONE:
            return
        key = st.key
        with self._lock:
            self._wakes.pop(key, None)
            self._in_flight.discard(key)
        failed = bool(st.failure or st.lost)
        if self.cfg.delete_finished_pods and not (failed and self.cfg.keep_failed_pods) and not st.deleted:
            self._delete(key)
            st.deleted = True
            st.store(tctx.state)

    def _delete(self, key: PodKey) -> None:
        try:
            self._delete_object(key)
        except ApiException as e:
            if e.status != 404:
                raise

    def _delete_object(self, key: PodKey) -> None:
        self.api.delete_namespaced_pod(key[1], key[0], grace_period_seconds=0)

    # -- the informer's side -----------------------------------------------------------------
    def _changed(self, pod: dict | None, key: PodKey) -> None:
        """An object changed (None: it is gone): wake its execution; a finished one makes room for a waiting one."""
        finished = pod is None or self._finished(pod)
        with self._lock:
            wake = self._wakes.get(key)
            if finished and key in self._in_flight:
                self._in_flight.discard(key)
                waiting, self._waiting_for_room = list(self._waiting_for_room.values()), {}
            else:
                waiting = []
            if not finished and pod is not None and key not in self._in_flight and _managed_here(pod):
                self._in_flight.add(key)  # a pod listed after a restart
        if wake is not None:
            wake(None)
        for other in waiting:
            other(None)


def _managed_here(pod: dict) -> bool:
    return (pod.get("metadata", {}).get("labels") or {}).get(MANAGED_LABEL) == "true"


def _json(response) -> dict:
    return json.loads(response.data)


def error_message(e: ApiException) -> str:
    """The apiserver's message in a refused request."""
    try:
        return json.loads(e.body).get("message", "") if e.body else ""
    except (ValueError, AttributeError):
        return str(e.body or "")
