"""One array item as a sub-node (FlytePropeller's arrayNodeExecutionContext and externalResourcesEventRecorder).

Item i is the array's sub-node under the id `<array node id>-n<i>`, with data dir
`<array output dir>/<i>` and outputs under `<data dir>/<attempt>/`. It runs through the same node
executor steps (retries, system-failure budget, timeouts) and the same task handler (plugins,
cache) as a task node. As in Flyte's SINGLE_INPUT_FILE data mode, the task process gets the
array node's own inputs.pb (flytekit's map task picks element FLYTE_K8S_ARRAY_INDEX of each list),
while the engine's in-memory view of the inputs (cache keys, in-process plugins) is the item's own.
Items send no events of their own: ItemEvents turns what they report into ExternalResourceInfo
entries of the array node's TaskExecutionEvent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from flyteidl.core import catalog_pb2, execution_pb2, literals_pb2, tasks_pb2, workflow_pb2
from flyteidl.event import event_pb2
from sqlalchemy.orm import Session

from flytelite.idl.enums import as_enum
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.propeller.nodes.handler import NodeExecutionContext
from flytelite.propeller.nodes.task.handler import TaskHandler
from flytelite.propeller.status import TaskStatus

# Plain ints: looking values up on protobuf enum wrappers is slow, and items report often.
NODE_SUCCEEDED = execution_pb2.NodeExecution.SUCCEEDED
TASK_SUCCEEDED = execution_pb2.TaskExecution.SUCCEEDED
# What FlytePropeller puts in every array item's environment (flytekit reads the index through the first).
JOB_INDEX_VAR_NAME = "BATCH_JOB_ARRAY_INDEX_VAR_NAME"
ARRAY_INDEX_VAR = "FLYTE_K8S_ARRAY_INDEX"


def item_node_id(array_node_id: str, index: int) -> str:
    return f"{array_node_id}-n{index}"


def item_template(task: tasks_pb2.TaskTemplate) -> tasks_pb2.TaskTemplate:
    """The map task as one item sees it: each list output becomes one value (FlytePropeller's arrayTaskReader)."""
    item = tasks_pb2.TaskTemplate()
    item.CopyFrom(task)
    for var in item.interface.outputs.variables.values():
        if var.type.HasField("collection_type"):
            var.type.CopyFrom(var.type.collection_type)
    return item


def item_inputs(inputs: literals_pb2.LiteralMap, index: int, bound: frozenset[str]) -> literals_pb2.LiteralMap:
    """Item `index`'s values: element `index` of every list input, bound inputs and scalars whole."""
    item = literals_pb2.LiteralMap()
    for name, lit in inputs.literals.items():
        if lit.HasField("collection") and name not in bound:
            values = lit.collection.literals
            if index >= len(values):
                raise IndexError(f"input {name!r} has {len(values)} values; item {index} has none")
            item.literals[name].CopyFrom(values[index])
        else:
            item.literals[name].CopyFrom(lit)
    return item


@dataclass
class ArrayView:
    """What every item of one evaluation of an array node shares."""

    array: NodeExecutionContext
    sub_node: workflow_pb2.Node
    task: tasks_pb2.TaskTemplate | None
    bound_inputs: frozenset[str]
    # The array node's input LiteralMap (whole lists), with offloaded literals already read.
    inputs: literals_pb2.LiteralMap

    def item_data_dir(self, index: int) -> str:
        return f"{self.array.output_dir}/{index}"


@dataclass
class ItemExecutionContext(NodeExecutionContext):
    index: int = 0
    view: ArrayView = field(default=None)  # type: ignore[assignment]

    @property
    def node_id(self) -> str:
        return item_node_id(self.view.array.node_id, self.index)

    @property
    def input_uri(self) -> str:
        return self.view.array.input_uri

    @property
    def task(self) -> tasks_pb2.TaskTemplate | None:
        return self.view.task

    def read_inputs(self) -> literals_pb2.LiteralMap:
        return item_inputs(self.view.inputs, self.index, self.view.bound_inputs)


class ItemTaskHandler(TaskHandler):
    """The task handler, run for one array item: the plugin sees the item's values and environment."""

    kind = "array-item"
    counts_for_parallelism = False

    def _task_context(self, nctx: NodeExecutionContext, tstatus: TaskStatus,
                      task: tasks_pb2.TaskTemplate) -> TaskExecutionContext:
        tctx = super()._task_context(nctx, tstatus, task)
        # TaskExecutionContext.inputs is a cached property: fill it with the item's values instead of the file's.
        tctx.__dict__["inputs"] = nctx.read_inputs()
        return tctx


def item_spec(spec, index: int):
    """The execution spec an item's plugin sees: the array index in its environment, no parallelism of its own."""
    envs = dict(spec.envs)
    envs[JOB_INDEX_VAR_NAME] = ARRAY_INDEX_VAR
    envs[ARRAY_INDEX_VAR] = str(index)
    return dataclasses.replace(spec, envs=envs, max_parallelism=0)


class ItemEvents:
    """Stands in for the EventRecorder while items are evaluated, keeping what each item reports."""

    def __init__(self) -> None:
        self.index = 0
        self.attempt = 0
        self._resources: dict[tuple[int, int], event_pb2.ExternalResourceInfo] = {}
        self._cache_status: dict[int, int] = {}

    def at(self, index: int, attempt: int) -> None:
        self.index, self.attempt = index, attempt

    def flush(self, then: Callable[[Session], None] | None = None) -> bool:
        """Nothing to send: the array node reports its items in its own events (nor is `then` run: False)."""
        return False

    def workflow(self, *args, **kwargs) -> None:
        raise RuntimeError("an array item cannot report a workflow event")

    def node(self, exec_id, node_id: str, phase: int, *, task_node_metadata=None, **_) -> None:
        if task_node_metadata is not None and task_node_metadata.cache_status != catalog_pb2.CACHE_DISABLED:
            self._cache_status[self.index] = task_node_metadata.cache_status
        if phase == NODE_SUCCEEDED and self._cache_status.get(self.index) == catalog_pb2.CACHE_HIT:
            # A cache hit starts no task attempt, so no task event tells of it (as in FlytePropeller).
            self.record(self.index, self.attempt, TASK_SUCCEEDED)

    def task(self, exec_id, node_id: str, task_id, retry_attempt: int, phase: int, phase_version: int, *,
             logs=None, generated_name: str = "", **_) -> None:
        info = self.record(self.index, retry_attempt, phase, external_id=generated_name)
        if logs:
            del info.logs[:]
            for log in logs:
                named = info.logs.add()
                named.CopyFrom(log)
                named.name = f"{log.name}-{self.index}"

    def record(self, index: int, attempt: int, phase: int, external_id: str = "") -> event_pb2.ExternalResourceInfo:
        info = self._resources.get((index, attempt))
        if info is None:
            info = self._resources[(index, attempt)] = event_pb2.ExternalResourceInfo(index=index,
                                                                                      retry_attempt=attempt)
        info.phase = as_enum(execution_pb2.TaskExecution.Phase, phase)
        if external_id:
            info.external_id = external_id
        return info

    def take(self) -> list[event_pb2.ExternalResourceInfo]:
        """Everything items reported since the last take, in item order."""
        taken = [self._resources[k] for k in sorted(self._resources)]
        for info in taken:
            status = self._cache_status.get(info.index)
            if status is not None:
                info.cache_status = as_enum(catalog_pb2.CatalogCacheStatus, status)
        self._resources.clear()
        self._cache_status.clear()
        return taken
