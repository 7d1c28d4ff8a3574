"""The task plugin interface (flyteplugins' pluginmachinery core) and what a plugin is given.

A plugin runs one attempt of a task: handle() starts it or checks on it and reports a PluginPhase;
abort() stops it; finalize() cleans up. Whatever a plugin must remember across rounds and restarts
goes in `tctx.state` (a JSON-serialisable dict persisted in the node's status), which a plugin reads and
writes through a PluginState dataclass of its own.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Generic, TypeVar

from flyteidl.core import execution_pb2, identifier_pb2, literals_pb2, tasks_pb2
from google.protobuf import struct_pb2

from flytelite.context import Context, ExecutionKey
from flytelite.idl.error_kinds import ErrorInfo
from flytelite.plugins.machinery.target import task_container
from flytelite.store.flyteworkflow import ExecutionSpec

TaskPhase = execution_pb2.TaskExecution.Phase


_Value = TypeVar("_Value")


class computed_once(Generic[_Value]):
    """A property computed on first use and kept in the instance, as functools.cached_property, without the lock
    that Python 3.11's shares among all instances of a class: the engine's workers would wait on each other's
    reads of their attempts' inputs."""

    def __init__(self, func: Callable[[Any], _Value]):
        self.func = func

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> _Value:
        value = instance.__dict__[self.name] = self.func(instance)
        return value


class PluginPhase(Enum):
    QUEUED = TaskPhase.QUEUED
    INITIALIZING = TaskPhase.INITIALIZING
    RUNNING = TaskPhase.RUNNING
    SUCCESS = TaskPhase.SUCCEEDED
    # Both failures are reported to admin as FAILED; the node executor decides about retries.
    RETRYABLE_FAILURE = -1
    PERMANENT_FAILURE = -2

    @property
    def event_phase(self) -> int:
        return TaskPhase.FAILED if self.value < 0 else self.value

    @property
    def terminal(self) -> bool:
        return self in (PluginPhase.SUCCESS, PluginPhase.RETRYABLE_FAILURE, PluginPhase.PERMANENT_FAILURE)


@dataclass
class PluginPhaseInfo:
    phase: PluginPhase
    version: int = 0
    reason: str = ""
    logs: list[execution_pb2.TaskLog] = field(default_factory=list)
    error: ErrorInfo | None = None
    # The plugin wrote futures.pb (a dynamic task) instead of outputs.pb.
    futures_uri: str = ""
    # Evaluate again at once (state was prepared that the next round acts on).
    requeue_now: bool = False
    # Evaluate again after this many seconds (used when no exit notification can be had).
    poll_after: float | None = None
    # Plugin-specific details for the task execution's closure (an agent's custom_info).
    custom_info: struct_pb2.Struct | None = None
    # QUEUED because every task slot is taken: attempts queued after this one would be told the same.
    no_room: bool = False

    @classmethod
    def failure(cls, code: str, message: str, *, kind: int, retryable: bool, logs=None,
                custom_info: struct_pb2.Struct | None = None) -> PluginPhaseInfo:
        phase = PluginPhase.RETRYABLE_FAILURE if retryable else PluginPhase.PERMANENT_FAILURE
        return cls(phase, reason=message, error=ErrorInfo(code, message, kind), logs=logs or [],
                   custom_info=custom_info)


_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9_]+")
_NOT_ALPHA_START = re.compile(r"^[^a-zA-Z_]+")


def unique_key(key: ExecutionKey, node_id: str, attempt: int) -> str:
    """FlytePropeller's per-retry generated name, made safe for file names and queries."""
    name = f"{key[2]}-{node_id}-{attempt}"
    return _NOT_ALNUM.sub("_", _NOT_ALPHA_START.sub("a", name))


def attempt_raw_prefix(raw_output_prefix: str, key: ExecutionKey, node_id: str, attempt: int) -> str:
    """Where one attempt writes offloaded data: `<raw prefix>/<shard>/<unique key>` (FlytePropeller's
    GetOutputDataSandboxPath shape)."""
    uid = unique_key(key, node_id, attempt)
    return posixpath.join(raw_output_prefix, hashlib.sha1(uid.encode()).hexdigest()[:2], uid)


_State = TypeVar("_State", bound="PluginState")


@dataclass
class PluginState:
    """Base of a plugin's typed state. The engine persists the state as a JSON dict (TaskStatus.plugin):
    a subclass's fields are its keys, and the fields at their default are left out of it. Statuses are
    `str` enums, written as their values; a subclass turns them back into members in __post_init__."""

    @classmethod
    def load(cls: type[_State], data: dict[str, Any]) -> _State:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def store(self, data: dict[str, Any]) -> None:
        """Write the fields into the engine's dict, in place (the engine persists that dict): those at their
        default as no key."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                data.pop(f.name, None)
            else:
                data[f.name] = value.value if isinstance(value, Enum) else value


@dataclass
class TaskExecutionContext:
    ctx: Context
    key: ExecutionKey
    spec: ExecutionSpec
    workflow_id: identifier_pb2.Identifier
    node_id: str
    attempt: int
    task: tasks_pb2.TaskTemplate
    input_uri: str
    output_prefix: str
    state: dict[str, Any]
    # Wake the engine for this execution (delay in seconds, None = now); thread-safe.
    wake: Callable[[float | None], None]
    # Whether this replica may still start the attempt's process (ExecutionRound.may_launch).
    may_launch: Callable[[], bool] = field(default=lambda: True)
    # Template variables of this kind of task besides Flyte's (machinery/template.py), by name.
    template_vars: dict[str, str] = field(default_factory=dict)

    @computed_once
    def container(self) -> tasks_pb2.Container:
        """The container the task runs in: its own, or its pod spec's primary one (machinery/target.py)."""
        return task_container(self.task)

    @property
    def input_prefix(self) -> str:
        return posixpath.dirname(self.input_uri)

    @property
    def unique_key(self) -> str:
        return unique_key(self.key, self.node_id, self.attempt)

    def raw_output_prefix_for(self, attempt: int) -> str:
        return attempt_raw_prefix(self.spec.raw_output_prefix, self.key, self.node_id, attempt)

    @property
    def raw_output_prefix(self) -> str:
        return self.raw_output_prefix_for(self.attempt)

    @property
    def checkpoint_prefix(self) -> str:
        return posixpath.join(self.raw_output_prefix, "_flytecheckpoints")

    @property
    def prev_checkpoint_prefix(self) -> str:
        if self.attempt == 0:
            return ""
        return posixpath.join(self.raw_output_prefix_for(self.attempt - 1), "_flytecheckpoints")

    @property
    def namespace(self) -> str:
        return f"{self.key[0]}-{self.key[1]}"

    @computed_once
    def inputs(self) -> literals_pb2.LiteralMap:
        return self.ctx.blobs.read_proto_if_exists(self.input_uri, literals_pb2.LiteralMap) or literals_pb2.LiteralMap()

    def task_template_path(self) -> str:
        """The task template stored beside the node's inputs (written on first use)."""
        path = posixpath.join(self.input_prefix, "task.pb")
        if not self.ctx.blobs.exists(path):
            self.ctx.blobs.write_proto(path, self.task)
        return path


class Plugin:
    """Base class of task plugins; `task_types` are the TaskTemplate.type values it runs. A default plugin also
    runs tasks of types no plugin runs, when they carry a container (FlytePropeller's pod plugin)."""

    id: str = ""
    task_types: tuple[str, ...] = ()
    is_default: bool = False

    def setup(self, loop) -> None:
        """Called on the engine's event loop when the engine starts."""

    def handle(self, tctx: TaskExecutionContext) -> PluginPhaseInfo:
        raise NotImplementedError

    def abort(self, tctx: TaskExecutionContext) -> None:
        pass

    def finalize(self, tctx: TaskExecutionContext) -> None:
        pass

    def waits_on_others(self, tctx: TaskExecutionContext, waiting: bool) -> None:
        """Told while the attempt runs whether it only waits on other attempts (a Flyte 2 parent on its
        children), which a plugin with bounded room lets use its room meanwhile."""

    def capacity(self) -> int | None:
        """How many attempts it runs at once at most (None: no bound of its own): a map's items beyond it would
        only wait for room."""
        return None

    def close(self) -> None:
        """Called when the engine stops; running attempts are left running (a restart adopts them)."""
