"""A task's target as the plugins that run it on this machine see it: the task's container, or, for a task that
carries a pod spec instead (flytekit's `pod_template`, flytekitplugins-pod's `sidecar` tasks), the primary
container of that spec, chosen as flyteplugins' pod helper chooses it (`primary_container_name` in the task's
config). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from flyteidl.core import literals_pb2, tasks_pb2
from google.protobuf.json_format import MessageToDict

# The primary container's name when the task's config names none (flytekit's default).
PRIMARY = "primary"


@dataclass(frozen=True)
class OtherContainer:
    """A container of the task's pod other than the primary one."""

    name: str
    image: str
    init: bool


def pod_spec(task: tasks_pb2.TaskTemplate) -> dict:
    """The task's own pod spec as a dict (empty when it carries none)."""
    if task.HasField("k8s_pod") and task.k8s_pod.HasField("pod_spec"):
        return MessageToDict(task.k8s_pod.pod_spec)
    return {}


def primary_container_name(task: tasks_pb2.TaskTemplate) -> str:
    return task.config.get("primary_container_name") or PRIMARY


def task_container(task: tasks_pb2.TaskTemplate) -> tasks_pb2.Container:
    """The container the task runs in: its own, or its pod spec's primary container (an empty Container when it
    has neither)."""
    if task.HasField("container"):
        return task.container
    name = primary_container_name(task)
    for spec in pod_spec(task).get("containers", []):
        if spec.get("name") == name:
            return _container(spec)
    return tasks_pb2.Container()


def carries_container(task: tasks_pb2.TaskTemplate) -> bool:
    """Whether the task has a command to run in a container (its own or its pod's primary one)."""
    container = task_container(task)
    return bool(len(container.command) or len(container.args))


def other_containers(task: tasks_pb2.TaskTemplate) -> list[OtherContainer]:
    """The pod's init containers and its containers other than the primary one."""
    spec = pod_spec(task)
    name = primary_container_name(task)
    return ([OtherContainer(c.get("name", ""), c.get("image", ""), True) for c in spec.get("initContainers", [])]
            + [OtherContainer(c.get("name", ""), c.get("image", ""), False) for c in spec.get("containers", [])
               if c.get("name") != name])


def _container(spec: dict) -> tasks_pb2.Container:
    return tasks_pb2.Container(
        image=spec.get("image", ""), command=[str(w) for w in spec.get("command", [])],
        args=[str(w) for w in spec.get("args", [])],
        env=[literals_pb2.KeyValuePair(key=e["name"], value=str(e.get("value", "")))
             for e in spec.get("env", []) if "name" in e])
