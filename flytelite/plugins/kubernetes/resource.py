"""Task attempts as an operator's custom resource (FlytePropeller's k8s plugin manager with a resource handler per
task type: RayJob, DaskJob, PyTorchJob, MPIJob): the attempt creates one object, built from the pod it would
otherwise run, under the pod's name (so a restarted server finds it instead of creating another), follows it
through an informer on that kind, and maps the status the operator writes to a phase. Abort and finalize delete
it; the operator's pods go with it (their owner is the object).

A cluster without the operator's resource definition refuses the create with 404: the attempt fails saying
which operator to install. The informer of a kind starts with the first attempt of it, so a server that never
routes the type watches nothing.
"""

from __future__ import annotations

import copy
from functools import cached_property

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM
from flytelite.plugins.kubernetes import phases
from flytelite.plugins.kubernetes.informer import Informer, PodKey, custom_informer
from flytelite.plugins.kubernetes.plugin import KubernetesPlugin, PodState, error_message
from flytelite.plugins.machinery.core import PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.taskspec import BadShape
from flytelite.plugins.machinery.template import TemplateError


class CustomResourcePlugin(KubernetesPlugin):
    """A task type run as an operator's custom resource; a subclass builds the object and reads its status."""

    is_default = False
    watch_from_start = False
    group = ""
    version = ""
    plural = ""
    kind = ""
    # Who serves the resource, in the error of a cluster that lacks it.
    operator = ""

    @cached_property
    def objects(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api.api_client)

    def _new_informer(self) -> Informer:
        return custom_informer(self.objects, self.group, self.version, self.plural, self._changed)

    # -- what a subclass gives ----------------------------------------------------------------
    def build(self, tctx: TaskExecutionContext, pod: dict) -> dict:
        """The object's spec from the attempt's pod (raises BadShape for a task config it cannot run)."""
        raise NotImplementedError

    def phase(self, obj: dict) -> phases.PodState:
        """The attempt's state from the object's status, as flyteplugins maps the operator's."""
        raise NotImplementedError

    # -- the manager's hooks ------------------------------------------------------------------
    def _manifest(self, tctx: TaskExecutionContext, namespace: str) -> dict:
        pod = self._pod_manifest(tctx, namespace)
        try:
            spec = self.build(tctx, pod)
        except BadShape as e:
            raise TemplateError(str(e)) from None
        return {"apiVersion": f"{self.group}/{self.version}", "kind": self.kind,
                "metadata": copy.deepcopy(pod["metadata"]), "spec": spec}

    def _create_object(self, namespace: str, obj: dict) -> None:
        self.objects.create_namespaced_custom_object(self.group, self.version, namespace, self.plural, obj)

    def _create_failed(self, tctx: TaskExecutionContext, key: PodKey, e: ApiException) -> PluginPhaseInfo:
        if e.status == 404 and "namespaces" not in error_message(e):
            return PluginPhaseInfo.failure(
                E.RUNTIME_FAILURE, f"creating {self.kind} {key[0]}/{key[1]} for task {tctx.task.id.name}: the "
                f"cluster serves no {self.kind} resource ({self.group}/{self.version}); install {self.operator} "
                f"there, or run task type {tctx.task.type!r} on this machine (plugins: {{{tctx.task.type}: local}})",
                kind=SYSTEM, retryable=False)
        return super()._create_failed(tctx, key, e)

    def _fetch(self, key: PodKey):
        return self.objects.get_namespaced_custom_object(self.group, self.version, key[0], self.plural, key[1],
                                                         _preload_content=False)

    def _observe(self, obj: dict, st: PodState) -> phases.PodState:
        if obj.get("metadata", {}).get("deletionTimestamp"):
            return phases.PodState("failed", f"the {self.kind} is being deleted before it finished",
                                   "UnexpectedObjectDeletion", SYSTEM, True)
        return self.phase(obj)

    def _finished(self, obj: dict) -> bool:
        return self.phase(obj).done

    def _delete_object(self, key: PodKey) -> None:
        self.objects.delete_namespaced_custom_object(self.group, self.version, key[0], self.plural, key[1],
                                                     propagation_policy="Background")


# -- pod specs, as flytek8s shapes them for the operators' replicas -------------------------------------
def container(spec: dict, name: str) -> dict:
    """The container of that name in a pod spec."""
    for c in spec.get("containers", []):
        if c.get("name") == name:
            return c
    raise BadShape(f"primary container [{name}] not found in pod spec")


def replica_spec(pod: dict, primary: str, name: str) -> tuple[dict, dict]:
    """A copy of the attempt's pod spec with its primary container renamed: (spec, that container)."""
    spec = copy.deepcopy(pod["spec"])
    main = container(spec, primary)
    main["name"] = name
    return spec, main


def template(pod: dict, spec: dict) -> dict:
    """A pod template of the attempt's labels and annotations around `spec`."""
    meta = pod["metadata"]
    return {"metadata": {"labels": dict(meta.get("labels", {})), "annotations": dict(meta.get("annotations", {}))},
            "spec": spec}


def overlay(spec: dict, over: dict) -> dict:
    """`over` (a task's own pod spec for one group) onto `spec`: its values win, containers merge by name."""
    out = copy.deepcopy(spec)
    for key, value in over.items():
        if key == "containers":
            for c in value:
                mine = next((m for m in out.setdefault("containers", []) if m.get("name") == c.get("name")), None)
                if mine is None:
                    out["containers"].append(copy.deepcopy(c))
                else:
                    mine.update(copy.deepcopy(c))
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **copy.deepcopy(value)}
        else:
            out[key] = copy.deepcopy(value)
    return out


def condition_phase(conditions: list[dict], created: str) -> phases.PodState:
    """A Kubeflow job's phase from its newest true condition, as flyteplugins' kfoperators map it."""
    current = sorted((c for c in conditions or [] if c.get("status") == "True"),
                     key=lambda c: c.get("lastTransitionTime", ""), reverse=True)
    if conditions and not current:
        return phases.PodState("failed", f"found no current condition. Conditions: {conditions}",
                               E.DOWNSTREAM_SYSTEM_ERROR, SYSTEM, True)
    kind = current[0].get("type", "") if current else ""
    if kind in ("", "Created"):
        return phases.PodState("queued", "JobCreated")
    if kind in ("Running", "Restarting"):
        return phases.PodState("running")
    if kind == "Succeeded":
        return phases.PodState("succeeded")
    if kind == "Failed":
        return phases.PodState("failed", f"Job failed:\n\t{current[0].get('reason', '')} - "
                               f"{current[0].get('message', '')}", E.DOWNSTREAM_SYSTEM_ERROR, SYSTEM, True)
    if kind == "Suspended":
        return phases.PodState("queued", "Suspended")
    return phases.PodState("failed", f"unknown job condition {kind!r} (created {created})", E.UNKNOWN_PHASE,
                           SYSTEM, True)
