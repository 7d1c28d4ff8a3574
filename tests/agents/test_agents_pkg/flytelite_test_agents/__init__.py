"""Two flytekit agents and their task types, installed by flytelite's tests as a plugin package.

`WaitTask` (type `flytelite_wait`, async): CreateTask notes itself in the journal file the task names;
GetTask answers RUNNING, with a message and a log link, until the marker file exists, then SUCCEEDED
with `o0 = 2 * x`; a negative `x` fails. DeleteTask notes itself in the journal. The resource meta
carries all it needs, so any agent server (a restarted one too) can answer for a task.
`GreetTask` (type `flytelite_greet`, sync): answers `o0 = "hello <name>"` at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flyteidl.core.execution_pb2 import TaskExecution
from flytekit import kwtypes
from flytekit.core.base_task import PythonTask
from flytekit.core.interface import Interface
from flytekit.extend.backend.base_agent import (
    AgentRegistry,
    AsyncAgentBase,
    AsyncAgentExecutorMixin,
    Resource,
    ResourceMeta,
    SyncAgentBase,
    SyncAgentExecutorMixin,
)
from flytekit.models.core.execution import TaskLog

WAIT_TYPE = "flytelite_wait"
GREET_TYPE = "flytelite_greet"


def _note(journal: str, line: str) -> None:
    with open(journal, "a") as f:
        f.write(line + "\n")


@dataclass
class WaitMeta(ResourceMeta):
    marker: str
    journal: str
    x: int


class WaitAgent(AsyncAgentBase):
    name = "flytelite test wait agent"

    def __init__(self):
        super().__init__(task_type_name=WAIT_TYPE, metadata_type=WaitMeta)

    def create(self, task_template, output_prefix, inputs=None, task_execution_metadata=None, **kwargs) -> WaitMeta:
        values = inputs.literals
        meta = WaitMeta(marker=values["marker"].scalar.primitive.string_value,
                        journal=values["journal"].scalar.primitive.string_value,
                        x=values["x"].scalar.primitive.integer)
        node = task_execution_metadata.task_execution_id.node_execution_id.node_id if task_execution_metadata else ""
        _note(meta.journal, f"create {node} {os.getpid()}")
        return meta

    def get(self, resource_meta: WaitMeta, **kwargs) -> Resource:
        _note(resource_meta.journal, f"get {os.getpid()}")
        if resource_meta.x < 0:
            return Resource(phase=TaskExecution.FAILED, message=f"x must not be negative, got {resource_meta.x}")
        link = [TaskLog(uri=f"https://agent.invalid/jobs/{os.path.basename(resource_meta.marker)}",
                        name="Test agent job").to_flyte_idl()]
        if not os.path.exists(resource_meta.marker):
            return Resource(phase=TaskExecution.RUNNING, message=f"waiting for {resource_meta.marker}",
                            log_links=link, custom_info={"marker": resource_meta.marker})
        return Resource(phase=TaskExecution.SUCCEEDED, message="the marker is there", log_links=link,
                        outputs={"o0": resource_meta.x * 2}, custom_info={"marker": resource_meta.marker})

    def delete(self, resource_meta: WaitMeta, **kwargs) -> None:
        _note(resource_meta.journal, f"delete {os.path.basename(resource_meta.marker)}")


class GreetAgent(SyncAgentBase):
    name = "flytelite test greet agent"

    def __init__(self):
        super().__init__(task_type_name=GREET_TYPE)

    def do(self, task_template, output_prefix, inputs=None, **kwargs) -> Resource:
        name = inputs.literals["name"].scalar.primitive.string_value
        return Resource(phase=TaskExecution.SUCCEEDED, outputs={"o0": f"hello {name}"})


class WaitTask(AsyncAgentExecutorMixin, PythonTask):
    _TASK_TYPE = WAIT_TYPE

    def __init__(self, name: str, **kwargs):
        super().__init__(name=name, task_type=WAIT_TYPE,
                         interface=Interface(inputs=kwtypes(marker=str, journal=str, x=int), outputs=kwtypes(o0=int)),
                         **kwargs)


class GreetTask(SyncAgentExecutorMixin, PythonTask):
    _TASK_TYPE = GREET_TYPE

    def __init__(self, name: str, **kwargs):
        super().__init__(name=name, task_type=GREET_TYPE,
                         interface=Interface(inputs=kwtypes(name=str), outputs=kwtypes(o0=str)), **kwargs)


AgentRegistry.register(WaitAgent())
AgentRegistry.register(GreetAgent())
