"""Reading a task's specification as flyteplugins reads it: its `custom` (unknown fields and versions refused),
its resources as Kubernetes quantities, and whether a shape fits this machine. What cannot run is a BadShape,
whose message says why."""

from __future__ import annotations

import math
import os
import re

from flyteidl.core import tasks_pb2
from google.protobuf import json_format, message

from flytelite.plugins.machinery.slots import machine_memory

_QUANTITY = re.compile(r"^([0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])?$")
_UNITS = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
          "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


class BadShape(ValueError):
    """The task's engine configuration cannot run here; the message says why."""


def quantity(value: str) -> float:
    """A Kubernetes quantity ("500m", "2", "1Gi") as a number."""
    match = _QUANTITY.match(value.strip())
    if not match:
        raise BadShape(f"{value!r} is not a quantity (e.g. 500m, 2, 1Gi)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def resource(resources: tasks_pb2.Resources, name: int) -> str:
    """A resource's limit, else its request ("" for neither)."""
    for entries in (resources.limits, resources.requests):
        for entry in entries:
            if entry.name == name:
                return entry.value
    return ""


def custom(task: tasks_pb2.TaskTemplate, proto: type[message.Message], versions: tuple[int, ...] = (0,)):
    """The task's `custom` read as flyteplugins reads it (unknown fields refused, as Go's jsonpb does)."""
    if task.task_type_version not in versions:
        raise BadShape(f"task type {task.type!r} version {task.task_type_version} is not supported; flytelite "
                       f"reads versions {', '.join(map(str, versions))}")
    try:
        return json_format.ParseDict(json_format.MessageToDict(task.custom), proto())
    except json_format.ParseError as e:
        raise BadShape(f"its custom config is not a {proto.DESCRIPTOR.full_name}: {e}") from None


def fits(what: str, cores: float, memory: float) -> None:
    """Refuse a shape larger than this machine, as a pod too large for any node is never scheduled."""
    have_cores, have_memory = os.cpu_count() or 1, machine_memory()
    if cores > have_cores:
        raise BadShape(f"{what} ask for {cores:g} cores; this machine has {have_cores}")
    if have_memory and memory > have_memory:
        raise BadShape(f"{what} ask for {memory / 2 ** 30:.1f} GiB of memory; this machine has "
                       f"{have_memory / 2 ** 30:.1f} GiB")


def cores_of(value: str, default: float) -> int:
    return max(1, math.ceil(quantity(value))) if value else int(default)
