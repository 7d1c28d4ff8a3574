"""The array node handler: map tasks, and arrays of launch plans and subworkflows (FlytePropeller's
nodes/array/handler.go).

An array node runs its sub-node (a task, a launch plan or a subworkflow) once per item of its list
inputs. Its sub-status (state.py) goes NONE -> EXECUTING -> SUCCEEDED or FAILED (or ABORTED):
- NONE: the inputs are sized and every item is reported as not started.
- EXECUTING: items run as sub-nodes (items.py) through the node executor and the handler of the
  sub-node's kind, in index order, at most `parallelism` at once (when the array sets none, items
  share the execution's max parallelism). Each round looks only at items in flight and the next to start.
- As soon as too many items failed to reach min_successes / min_success_ratio, items in flight are
  aborted and the node fails with the items' errors; once every item finished and enough
  succeeded, their outputs are gathered into lists in item order (None for a failed item).
The node reports one TaskExecutionEvent (retry attempt 0, task type container_array) whose
ExternalResourceInfo entries are its items, as FlytePropeller does; FlyteRemote shows them as
`node_execution.task_executions[0].closure.metadata.external_resources`.
"""

from __future__ import annotations

import dataclasses
import math
import posixpath
from collections import OrderedDict

from flyteidl.core import execution_pb2, identifier_pb2, literals_pb2
from flyteidl.event import event_pb2

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import SYSTEM, USER
from flytelite.plugins.machinery.core import unique_key
from flytelite.plugins.registry import PluginNotFound
from flytelite.propeller.nodes.array import progress
from flytelite.propeller.nodes.array.data import ArrayInputError, array_size, gather_outputs, load_inputs
from flytelite.propeller.nodes.array.items import (
    ArrayView,
    ItemEvents,
    ItemExecutionContext,
    ItemSubworkflowHandler,
    ItemTaskHandler,
    item_inputs,
    item_spec,
    item_template,
)
from flytelite.propeller.nodes.array.state import ARRAY_DONE, ArrayPhase, ArrayState
from flytelite.propeller.nodes.handler import NodeExecutionContext, NodeHandler, PhaseInfo, SubNodeExecutor
from flytelite.propeller.nodes.launch_plan.handler import LaunchPlanHandler
from flytelite.propeller.nodes.offloading import LiteralTooLarge, offload_large_literal
from flytelite.propeller.phases import NODE_DONE, NodeStatusPhase
from flytelite.propeller.status import NodeStatus
from flytelite.propeller.workflow import node_kind

# TaskExecution phases as plain ints (protobuf enum wrapper lookups are slow in per-item loops).
TaskPhase = execution_pb2.TaskExecution
TASK_TYPE = "container_array"
PLUGIN_ID = "flytelite-array"
# Array inputs kept decoded between rounds (by inputs.pb path).
INPUTS_CACHE_SIZE = 16

_ITEM_TASK_PHASE = {
    NodeStatusPhase.QUEUED: TaskPhase.QUEUED,
    NodeStatusPhase.RUNNING: TaskPhase.RUNNING,
    NodeStatusPhase.RETRYABLE_FAILURE: TaskPhase.RUNNING,
    NodeStatusPhase.SUCCEEDING: TaskPhase.SUCCEEDED,
    NodeStatusPhase.SUCCEEDED: TaskPhase.SUCCEEDED,
    NodeStatusPhase.RECOVERED: TaskPhase.SUCCEEDED,
    NodeStatusPhase.FAILING: TaskPhase.FAILED,
    NodeStatusPhase.FAILED: TaskPhase.FAILED,
    NodeStatusPhase.TIMING_OUT: TaskPhase.FAILED,
    NodeStatusPhase.TIMED_OUT: TaskPhase.FAILED,
}


class ArrayHandler(NodeHandler):
    kind = "array"
    finalize_required = True
    counts_for_parallelism = True

    def __init__(self, plugins):
        self.items = ItemTaskHandler(plugins)
        # Items of the other kinds an array maps over (workflow nodes), by node kind.
        self.workflow_items: dict[str, NodeHandler] = {"launch_plan": LaunchPlanHandler(),
                                                       "subworkflow": ItemSubworkflowHandler()}
        self._inputs: OrderedDict[str, literals_pb2.LiteralMap] = OrderedDict()

    # -- the NodeHandler interface ---------------------------------------------------------
    def handle(self, nctx: NodeExecutionContext) -> PhaseInfo:
        sub = nctx.node.array_node.node
        kind = sub.WhichOneof("target")
        if kind not in ("task_node", "workflow_node"):
            return PhaseInfo.failure(
                E.ARRAY_NODE_KIND_NOT_SUPPORTED,
                f"array node {nctx.node_id} maps over a {kind or 'empty'} node; "
                "flytelite runs array nodes over tasks, launch plans and subworkflows", kind=USER)
        state = ArrayState.from_dict(nctx.status.array)
        try:
            return self._handle(nctx, state)
        finally:
            nctx.status.array = state.to_dict()

    def abort(self, nctx: NodeExecutionContext, reason: str) -> None:
        state = ArrayState.from_dict(nctx.status.array)
        if state.phase in ARRAY_DONE or state.phase == ArrayPhase.NONE:
            return
        view = self._view(nctx)
        events = ItemEvents()
        self._abort_items(nctx, view, state, events, reason)
        state.phase = ArrayPhase.ABORTED
        self._report(nctx, view, state, TaskPhase.ABORTED, events, every_item=True)
        nctx.status.array = state.to_dict()

    def finalize(self, nctx: NodeExecutionContext) -> None:
        state = ArrayState.from_dict(nctx.status.array)
        if not state.running:
            return
        view = self._view(nctx)
        irnd = self._item_round(nctx, ItemEvents())
        handler = self._item_handler(view)
        for index, st in state.running.items():
            handler.finalize(self._item_context(irnd, view, index, st))

    # -- phases -----------------------------------------------------------------------------
    def _handle(self, nctx: NodeExecutionContext, state: ArrayState) -> PhaseInfo:
        if state.phase == ArrayPhase.SUCCEEDED:
            return PhaseInfo.success(output_uri=nctx.outputs_uri)
        if state.phase in ARRAY_DONE:
            return PhaseInfo.failure(E.ARRAY_NODE_FAILED, nctx.status.message or "the array node failed", kind=USER)
        view = self._view(nctx)
        if view.over_tasks and view.task is None:
            ref = nctx.node.array_node.node.task_node.reference_id
            return PhaseInfo.failure(E.TASK_NOT_FOUND, f"array node {nctx.node_id} maps task {ref.name}@{ref.version}, "
                                     "which the compiled workflow does not contain", kind=SYSTEM)
        if state.phase == ArrayPhase.NONE:
            try:
                size = array_size(view.inputs, view.bound_inputs)
            except ArrayInputError as e:
                return PhaseInfo.failure(E.INVALID_ARRAY_LENGTH, f"array node {nctx.node_id}: {e}", kind=USER)
            for f in dataclasses.fields(ArrayState):
                setattr(state, f.name, getattr(ArrayState.start(size), f.name))
            # Every item is known from the start, as not yet started (FlytePropeller's initial events).
            self._report(nctx, view, state, TaskPhase.QUEUED, None, every_item=True)
            # Items start in the next round, once the node is reported running and holds its slot.
            nctx.round.requeue_now = True
            return PhaseInfo.running(f"{size} items to run")

        events = ItemEvents()
        self._run_items(nctx, view, state, events)
        return self._decide(nctx, view, state, events)

    def _decide(self, nctx: NodeExecutionContext, view: ArrayView, state: ArrayState, events: ItemEvents) -> PhaseInfo:
        array = nctx.node.array_node
        needed = min_successes(array, state.size)
        all_done = state.done_items == state.size
        if state.size - state.failed < needed and (all_done or not array.run_all_sub_nodes):
            self._abort_items(nctx, view, state, events, "the array node failed")
            state.phase = ArrayPhase.FAILED
            message = (f"{state.failed} of {state.size} items of array node {nctx.node_id} failed, and at least "
                       f"{needed} must succeed:\n{state.error_summary()}")
            info = PhaseInfo.failure(E.ARRAY_NODE_FAILED, message, kind=USER)
            self._report(nctx, view, state, TaskPhase.FAILED, events, every_item=True, error=info.error)
            return info
        if all_done:
            try:
                outputs = self._gather(nctx, view, state)
            except LiteralTooLarge as e:
                info = PhaseInfo.failure(E.LITERAL_TOO_LARGE, str(e), kind=USER)
                self._report(nctx, view, state, TaskPhase.FAILED, events, every_item=True, error=info.error)
                return info
            nctx.blobs.write_proto(nctx.outputs_uri, outputs)
            state.phase = ArrayPhase.SUCCEEDED
            self._report(nctx, view, state, TaskPhase.SUCCEEDED, events, every_item=True, output_uri=nctx.outputs_uri)
            return PhaseInfo.success(output_uri=nctx.outputs_uri)
        progress.hold(state, events.take())
        if state.pending:
            wait = progress.seconds_until_due(state, nctx.round.now.timestamp())
            if wait > 0:
                nctx.round.requeue_in(wait)
            else:
                state.phase_version += 1
                self._report(nctx, view, state, TaskPhase.RUNNING, events)
        return PhaseInfo.running(f"{state.succeeded} of {state.size} items succeeded, {len(state.running)} running")

    # -- items ------------------------------------------------------------------------------
    def _run_items(self, nctx: NodeExecutionContext, view: ArrayView, state: ArrayState, events: ItemEvents) -> None:
        """Look at the items in flight, then start the next ones while there is room."""
        rnd = nctx.round
        irnd = self._item_round(nctx, events)
        executor = nctx.executor
        if executor is None:
            raise RuntimeError(f"array node {nctx.node_id} was handed no node executor to run its items with")
        for index in sorted(state.running):
            self._step(executor, irnd, view, state, index, state.running[index])
        room, shares_workflow = self._capacity(nctx, state)
        bound = self._plugin_capacity(nctx, view)
        if bound is not None:
            room = min(room, bound)
        array = nctx.node.array_node
        needed = min_successes(array, state.size)
        while state.next_item < state.size and len(state.running) < room:
            if state.size - state.failed < needed and not array.run_all_sub_nodes:
                break  # the node fails now: starting more items would only waste them
            index = state.next_item
            state.next_item += 1
            self._step(executor, irnd, view, state, index, NodeStatus(data_dir=view.item_data_dir(index)))
        if shares_workflow and state.running:
            # Items hold slots of the execution's max parallelism; the node itself already holds one.
            rnd.parallelism += len(state.running) - 1
        if irnd.requeue_now:
            rnd.requeue_now = True
        if irnd.requeue_after is not None:
            rnd.requeue_in(irnd.requeue_after)

    def _step(self, executor: SubNodeExecutor, irnd, view: ArrayView, state: ArrayState, index: int,
              st: NodeStatus) -> None:
        irnd.spec = item_spec(view.array.round.spec, index)
        ictx = self._item_context(irnd, view, index, st)
        if view.over_tasks:
            irnd.events.at(index, st.attempts)
        else:
            irnd.events.at(index, st.attempts, ictx.node_id)
            if st.phase == NodeStatusPhase.NOT_YET_STARTED:
                ictx.blobs.write_proto(ictx.input_uri, item_inputs(view.inputs, index, view.bound_inputs))
        executor.handle_subnode(ictx, self._item_handler(view))
        if st.phase in NODE_DONE:
            state.finish(index, st)
        else:
            state.running[index] = st
            state.set_item_phase(index, st.phase)

    def _abort_items(self, nctx: NodeExecutionContext, view: ArrayView, state: ArrayState, events: ItemEvents,
                     reason: str) -> None:
        irnd = self._item_round(nctx, events)
        handler = self._item_handler(view)
        for index, st in sorted(state.running.items()):
            irnd.spec = item_spec(nctx.round.spec, index)
            ictx = self._item_context(irnd, view, index, st)
            events.at(index, st.attempts, "" if view.over_tasks else ictx.node_id)
            handler.abort(ictx, reason)
            handler.finalize(ictx)
            events.record(index, st.attempts, TaskPhase.ABORTED)
        state.running.clear()

    def _capacity(self, nctx: NodeExecutionContext, state: ArrayState) -> tuple[int, bool]:
        """How many items may run at once (FlytePropeller's inferParallelism), and whether they share the
        execution's max parallelism."""
        array, rnd = nctx.node.array_node, nctx.round
        if array.HasField("parallelism"):
            # An explicit concurrency; 0 means unlimited.
            return (array.parallelism or state.size), False
        if not rnd.max_parallelism:
            return state.size, True
        # The walk counted this node as one running node; its items replace that one.
        return max(0, rnd.max_parallelism - rnd.parallelism + 1), True

    def _plugin_capacity(self, nctx: NodeExecutionContext, view: ArrayView) -> int | None:
        """How many attempts the items' plugin runs at once (task slots of this machine): more items in flight
        would only wait for room, each looked at in every round."""
        if view.task is None:
            return None  # launch plans and subworkflows: their tasks are bounded where they run
        try:
            plugin = self.items.plugins.get(view.task, nctx.round.key, nctx.round.spec.task_plugins)
        except PluginNotFound:
            return None  # each item's task handler reports it
        return plugin.capacity()

    def _gather(self, nctx: NodeExecutionContext, view: ArrayView, state: ArrayState) -> literals_pb2.LiteralMap:
        blobs = nctx.blobs

        def read(index: int) -> literals_pb2.LiteralMap:
            uri = posixpath.join(view.item_data_dir(index), str(state.attempt(index)), "outputs.pb")
            return blobs.read_proto(uri, literals_pb2.LiteralMap)

        names = self._output_names(nctx, view)
        gathered = gather_outputs(names, state.size, state.item_phase, read)
        # FlytePropeller's array handler offloads each gathered list that is large enough.
        for name in names:
            offload_large_literal(blobs, posixpath.join(nctx.output_dir, f"{name}_offloaded_metadata.pb"),
                                  gathered.literals[name], nctx.round.ctx.config.literal_offloading)
        return gathered

    @staticmethod
    def _output_names(nctx: NodeExecutionContext, view: ArrayView) -> list[str]:
        """The outputs each item has: its task's, its launch plan's or its subworkflow's."""
        if view.task is not None:
            return sorted(view.task.interface.outputs.variables)
        ref = view.sub_node.workflow_node
        if ref.HasField("launchplan_ref"):
            plan = nctx.round.clients.launch_plan_reader.get_launch_plan(ref.launchplan_ref)
            return sorted(plan.closure.expected_outputs.variables) if plan is not None else []
        dag = nctx.dag_scope.subworkflow(ref.sub_workflow_ref)
        return sorted(dag.template.interface.outputs.variables) if dag is not None else []

    # -- contexts and events -----------------------------------------------------------------
    def _item_handler(self, view: ArrayView) -> NodeHandler:
        return self.items if view.over_tasks else self.workflow_items[node_kind(view.sub_node)]

    def _view(self, nctx: NodeExecutionContext) -> ArrayView:
        array = nctx.node.array_node
        task = _task_of(nctx, array.node)
        return ArrayView(array=nctx, sub_node=array.node, task=item_template(task) if task is not None else None,
                         bound_inputs=frozenset(array.bound_inputs), inputs=self._array_inputs(nctx))

    def _array_inputs(self, nctx: NodeExecutionContext) -> literals_pb2.LiteralMap:
        uri = nctx.input_uri
        inputs = self._inputs.get(uri)
        if inputs is None:
            inputs = self._inputs[uri] = load_inputs(nctx.blobs, uri)
            while len(self._inputs) > INPUTS_CACHE_SIZE:
                self._inputs.popitem(last=False)
        else:
            self._inputs.move_to_end(uri)
        return inputs

    @staticmethod
    def _item_round(nctx: NodeExecutionContext, events: ItemEvents):
        # Items report to `events`; their wake-ups are handed to the real round afterwards.
        return dataclasses.replace(nctx.round, events=events, requeue_now=False, requeue_after=None)

    @staticmethod
    def _item_context(irnd, view: ArrayView, index: int, st: NodeStatus) -> ItemExecutionContext:
        if view.over_tasks:
            return ItemExecutionContext(irnd, view.sub_node, st, index=index, view=view)
        # A subworkflow item nests its nodes' scope in the array node's, whose executor runs them.
        array = view.array
        return ItemExecutionContext(irnd, view.sub_node, st, scope=array.dag_scope, executor=array.executor,
                                    index=index, view=view)

    def _report(self, nctx: NodeExecutionContext, view: ArrayView, state: ArrayState, phase: int,
                events: ItemEvents | None, *, every_item: bool = False, output_uri: str = "", error=None) -> None:
        """The array node's TaskExecutionEvent with the item changes not reported yet; the first and the
        terminal one carry every item (in its last known state)."""
        if events is not None:
            progress.hold(state, events.take())
        resources = progress.release(state)
        if every_item:
            resources = _with_every_item(resources, state)
        rnd = nctx.round
        state.reported_at = rnd.now.timestamp()
        # Items of launch plans or subworkflows have no task: FlytePropeller reports none either.
        task_id = view.task.id if view.task is not None else identifier_pb2.Identifier()
        rnd.events.task(
            rnd.exec_id, nctx.node_id, task_id, 0, phase, 0 if every_item else state.phase_version,
            task_type=TASK_TYPE, input_uri=nctx.input_uri if phase == TaskPhase.QUEUED else "",
            output_uri=output_uri, error=error.to_proto() if error is not None else None,
            generated_name=unique_key(rnd.key, nctx.node_id, 0), plugin_identifier=PLUGIN_ID,
            external_resources=resources,
        )


def min_successes(array, size: int) -> int:
    """Items that must succeed (FlytePropeller: min_successes, else ceil(min_success_ratio * size), else all)."""
    criterion = array.WhichOneof("success_criteria")
    if criterion == "min_successes":
        return array.min_successes
    if criterion == "min_success_ratio":
        return math.ceil(array.min_success_ratio * size)
    return size


def _task_of(nctx: NodeExecutionContext, sub_node):
    scope = nctx.scope
    if scope is not None:
        return scope.task(sub_node)
    return nctx.round.workflow.task(sub_node)


def _with_every_item(resources: list[event_pb2.ExternalResourceInfo], state: ArrayState) -> list:
    """Add each item this event does not mention, in its last known phase (FlytePropeller does so at the end)."""
    mentioned = {r.index for r in resources}
    filled = list(resources)
    for i in range(state.size):
        if i not in mentioned:
            phase = _ITEM_TASK_PHASE.get(state.item_phase(i), TaskPhase.UNDEFINED)
            filled.append(event_pb2.ExternalResourceInfo(index=i, retry_attempt=state.attempt(i), phase=phase))
    filled.sort(key=lambda r: (r.index, r.retry_attempt))
    return filled
