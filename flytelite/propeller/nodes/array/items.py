"""One array item as a sub-node (FlytePropeller's arrayNodeExecutionContext and externalResourcesEventRecorder).

Item i is the array's sub-node under the id `<array node id>-n<i>`, with data dir
`<array output dir>/<i>` and outputs under `<data dir>/<attempt>/`. It runs through the same node
executor steps (retries, system-failure budget, timeouts) and the same task handler (plugins,
cache) as a task node. As in Flyte's SINGLE_INPUT_FILE data mode, the task process gets the
array node's own inputs.pb (flytekit's map task picks element FLYTE_K8S_ARRAY_INDEX of each list),
while the engine's in-memory view of the inputs (cache keys, in-process plugins) is the item's own.
Items send no events of their own: ItemEvents turns what they report into ExternalResourceInfo
entries of the array node's TaskExecutionEvent.

An item of a launch plan or a subworkflow (flytekit's `array_node(launch_plan)`) runs through that kind's
handler. Its own inputs are written to `<data dir>/inputs.pb` as it starts (a subworkflow's start node and a
child execution take a file); its phase is its node's, and the child execution it launched, named after
the item, hangs under the array node's execution in admin.
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
from flytelite.propeller.nodes.subworkflow.handler import SubworkflowHandler
from flytelite.propeller.nodes.task.handler import TaskHandler
from flytelite.propeller.scope import DagScope
from flytelite.propeller.status import TaskStatus

# Plain ints: looking values up on protobuf enum wrappers is slow, and items report often.
NODE_SUCCEEDED = execution_pb2.NodeExecution.SUCCEEDED
TASK_SUCCEEDED = execution_pb2.TaskExecution.SUCCEEDED
NodePhase, TaskPhase = execution_pb2.NodeExecution, execution_pb2.TaskExecution
# A workflow item's node phase as the phase of its entry in the array's event (FlytePropeller's
# mapNodeExecutionPhaseToTaskExecutionPhase).
_NODE_TO_TASK_PHASE: dict[int, int] = {
    NodePhase.QUEUED: TaskPhase.QUEUED, NodePhase.RUNNING: TaskPhase.RUNNING,
    NodePhase.SUCCEEDED: TaskPhase.SUCCEEDED, NodePhase.RECOVERED: TaskPhase.SUCCEEDED,
    NodePhase.FAILED: TaskPhase.FAILED, NodePhase.TIMED_OUT: TaskPhase.FAILED,
    NodePhase.ABORTED: TaskPhase.ABORTED,
}
# What FlytePropeller puts in every array item's environment (flytekit reads the index through the first).
JOB_INDEX_VAR_NAME = "BATCH_JOB_ARRAY_INDEX_VAR_NAME"
ARRAY_INDEX_VAR = "FLYTE_K8S_ARRAY_INDEX"


def item_node_id(array_node_id: str, index: int) -> str:
    return f"{array_node_id}-n{index}"


def item_data_dir(array_output_dir: str, index: int) -> str:
    """Item `index`'s data dir: its attempts' outputs (or error) are under `<data dir>/<attempt>/`."""
    return f"{array_output_dir}/{index}"


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
        return item_data_dir(self.array.output_dir, index)

    @property
    def over_tasks(self) -> bool:
        """Items are task attempts (a map task); else launch plans or subworkflows."""
        return self.sub_node.HasField("task_node")


@dataclass
class ItemExecutionContext(NodeExecutionContext):
    index: int = 0
    view: ArrayView = field(default=None)  # type: ignore[assignment]

    @property
    def node_id(self) -> str:
        return item_node_id(self.view.array.node_id, self.index)

    @property
    def recorded_node_id(self) -> str:
        return self.view.array.node_id

    @property
    def input_uri(self) -> str:
        if self.view.over_tasks:
            return self.view.array.input_uri
        return f"{self.status.data_dir}/inputs.pb"

    @property
    def task(self) -> tasks_pb2.TaskTemplate | None:
        return self.view.task

    def read_inputs(self) -> literals_pb2.LiteralMap:
        return item_inputs(self.view.inputs, self.index, self.view.bound_inputs)


class ItemSubworkflowHandler(SubworkflowHandler):
    """The subworkflow handler, run for one array item: the item's nodes take their ids from the item's."""

    kind = "array-subworkflow-item"

    def child_scope(self, nctx: NodeExecutionContext) -> DagScope | None:
        dag = nctx.dag_scope.subworkflow(nctx.node.workflow_node.sub_workflow_ref)
        if dag is None:
            return None
        return nctx.dag_scope.child(dag, nctx.status, nctx.node_id, inputs_uri=nctx.input_uri)


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
        # The node id of a workflow item (whose own node events give its phase), '' for a task item.
        self.item_node_id = ""
        self._resources: dict[tuple[int, int], event_pb2.ExternalResourceInfo] = {}
        self._cache_status: dict[int, int] = {}

    def at(self, index: int, attempt: int, item_node_id: str = "") -> None:
        self.index, self.attempt, self.item_node_id = index, attempt, item_node_id

    def flush(self, then: Callable[[Session], None] | None = None) -> bool:
        """Nothing to send: the array node reports its items in its own events (nor is `then` run: False)."""
        return False

    def workflow(self, *args, **kwargs) -> None:
        raise RuntimeError("an array item cannot report a workflow event")

    def node(self, exec_id, node_id: str, phase: int, *, task_node_metadata=None, workflow_node_metadata=None,
             **_) -> None:
        if self.item_node_id:
            if node_id == self.item_node_id and phase in _NODE_TO_TASK_PHASE:
                child = workflow_node_metadata.execution_id.name if workflow_node_metadata is not None else ""
                self.record(self.index, self.attempt, _NODE_TO_TASK_PHASE[phase], external_id=child or node_id)
            return  # the nodes of a subworkflow item are the item's own business
        if task_node_metadata is not None and task_node_metadata.cache_status != catalog_pb2.CACHE_DISABLED:
            self._cache_status[self.index] = task_node_metadata.cache_status
        if phase == NODE_SUCCEEDED and self._cache_status.get(self.index) == catalog_pb2.CACHE_HIT:
            # A cache hit starts no task attempt, so no task event tells of it (as in FlytePropeller).
            self.record(self.index, self.attempt, TASK_SUCCEEDED)

    def task(self, exec_id, node_id: str, task_id, retry_attempt: int, phase: int, phase_version: int, *,
             logs=None, generated_name: str = "", **_) -> None:
        if self.item_node_id:
            return  # a task of a subworkflow item
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
