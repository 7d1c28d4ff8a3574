"""What the console shows, read straight from the store rows and blobs admin keeps (read-only).

Executions, node executions and task executions are read as FlyteAdmin keeps
them: closures in `closure_pb`, inputs and outputs as LiteralMap blobs at the
URIs the closures name. Nothing here writes.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from datetime import datetime

from flyteidl.admin import execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import catalog_pb2, compiler_pb2, errors_pb2, literals_pb2, types_pb2, workflow_pb2
from google.protobuf import duration_pb2, timestamp_pb2
from sqlalchemy import select

from flytelite.context import Context, ExecutionKey
from flytelite.idl.ids import END_NODE, START_NODE
from flytelite.idl.phases import (
    NODE_TERMINAL,
    TASK_TERMINAL,
    WORKFLOW_TERMINAL,
    node_phase_name,
    task_phase_name,
    workflow_phase_name,
)
from flytelite.idl.times import from_timestamp
from flytelite.propeller.nodes.array.data import ArrayInputError, array_size, load_inputs
from flytelite.propeller.nodes.array.items import item_data_dir, item_inputs
from flytelite.runs import store as runs_store
from flytelite.store.models import Action, Execution, FlyteWorkflow, NodeExecution, Signal, TaskExecution

# FlyteConsole hides the start and end nodes; their data is the workflow's inputs and outputs.
HIDDEN_NODES = frozenset({START_NODE, END_NODE})
# Above this many node executions, node inputs and outputs are not read (one page refresh, many blobs).
MAX_NODES_WITH_DATA = 200


@dataclass
class Data:
    """A LiteralMap blob: its literals, or why they could not be shown."""

    uri: str = ""
    literals: literals_pb2.LiteralMap | None = None
    problem: str = ""


@dataclass
class AttemptView:
    retry_attempt: int
    phase: str
    started_at: datetime | None
    duration: float | None
    logs: list[tuple[str, str]]
    error: str = ""
    reason: str = ""
    task: str = ""
    # Map task items of this attempt: phase name -> count.
    items: dict[str, int] = field(default_factory=dict)
    # Whether it ended (its last reason then tells what happened before, not what happens now).
    ended: bool = False
    # Every reason its events gave, oldest first: (when, message).
    reasons: list[tuple[datetime | None, str]] = field(default_factory=list)


@dataclass
class SignalView:
    signal_id: str
    type: types_pb2.LiteralType
    value: literals_pb2.Literal | None


@dataclass
class NodeView:
    row_id: int
    node_id: str
    spec_node_id: str
    phase: str
    started_at: datetime | None
    duration: float | None
    error: str = ""
    cache_status: str = ""
    deck_uri: str = ""
    # flyte://v1/<project>/<domain>/<execution>/<node>: with /i, /o or /d, what GetData resolves.
    flyte_url: str = ""
    inputs: Data | None = None
    outputs: Data | None = None
    attempts: list[AttemptView] = field(default_factory=list)
    children: list[NodeView] = field(default_factory=list)
    # A cache hit's source: the execution whose task produced the outputs reused, (project, domain, name).
    cache_source: tuple[str, str, str] | None = None
    # The workflow's node this is an execution of (None when the console cannot find it), for its name.
    spec: workflow_pb2.Node | None = None
    # The workflow its children are the nodes of: a subworkflow's, a dynamic node's, a branch's arms (its graph).
    graph: compiler_pb2.CompiledWorkflow | None = None


@dataclass
class ExecutionView:
    project: str
    domain: str
    name: str
    phase: str
    running: bool
    launch_plan: str
    workflow: str
    created_at: datetime | None
    started_at: datetime | None
    duration: float | None
    inputs: Data
    outputs: Data
    error: str = ""
    abort_cause: str = ""
    nodes: list[NodeView] = field(default_factory=list)
    node_count: int = 0
    # (project, domain, name, version) of the launch plan / workflow, for links.
    launch_plan_id: tuple[str, str, str, str] | None = None
    workflow_id: tuple[str, str, str, str] | None = None
    mode: str = ""
    # The execution this one relaunched or recovered (its name in the same project and domain).
    reference: str = ""
    tags: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    # Archived (FlyteAdmin's EXECUTION_ARCHIVED): left out of the executions list unless asked for.
    archived: bool = False
    # The compiled workflow the engine runs, with its subworkflows, if the store still has it.
    compiled_closure: compiler_pb2.CompiledWorkflowClosure | None = None
    signals: list[SignalView] = field(default_factory=list)

    @property
    def compiled(self) -> compiler_pb2.CompiledWorkflow | None:
        """The workflow itself (for the graph)."""
        return self.compiled_closure.primary if self.compiled_closure is not None else None


@dataclass
class ExecutionSummary:
    project: str
    domain: str
    name: str
    phase: str
    launch_plan: str
    created_at: datetime | None
    duration: float | None


def _time(ts: timestamp_pb2.Timestamp, fallback: datetime | None = None) -> datetime | None:
    if ts.seconds or ts.nanos:
        return from_timestamp(ts)
    return fallback


def _duration(d: duration_pb2.Duration, started: datetime | None, running: bool, now: datetime) -> float | None:
    """The closure's duration, or the time since start while still running."""
    if running and started is not None:
        return max(0.0, (now - started).total_seconds())
    if d.seconds or d.nanos:
        return d.ToTimedelta().total_seconds()
    return None


def _span(closure, row, running: bool, now: datetime) -> tuple[datetime | None, float | None]:
    """When a node or an attempt started and how long it ran. One that never reported RUNNING (it went from
    QUEUED straight to its end within one round, or was a cache hit) has no start: as FlyteAdmin, flytelite
    starts the clock at RUNNING. Its span is then from its creation to its last update."""
    started = _time(closure.started_at, row.started_at)
    if started is not None:
        return started, _duration(closure.duration, started, running, now)
    created = _time(closure.created_at, row.created_at)
    if created is None:
        return None, None
    if running:
        return None, None  # not started yet: it has no bar
    updated = _time(closure.updated_at, row.updated_at)
    return created, max(0.0, (updated - created).total_seconds()) if updated is not None else None


def _error(err) -> str:
    if not err.message and not err.code:
        return ""
    return f"[{err.code}] {err.message}" if err.code else err.message


def read_data(ctx: Context, uri: str, inline: literals_pb2.LiteralMap | None = None) -> Data:
    """The LiteralMap at `uri` (or the inline one older closures carry)."""
    if not uri:
        return Data(literals=inline) if inline is not None and inline.literals else Data()
    try:
        lm = ctx.blobs.read_proto_if_exists(uri, literals_pb2.LiteralMap)
    except Exception as exc:  # noqa: BLE001 - an unreadable blob is reported on the page, not a 500
        return Data(uri=uri, problem=f"could not read {uri}: {type(exc).__name__}: {exc}")
    if lm is None:
        return Data(uri=uri, problem=f"{uri} does not exist (yet)")
    return Data(uri=uri, literals=lm)


def recent_executions(ctx: Context, limit: int = 100) -> list[ExecutionSummary]:
    with ctx.db.session() as session:
        rows = session.scalars(select(Execution).order_by(Execution.created_at.desc()).limit(limit)).all()
    now = ctx.clock.now()
    out = []
    for row in rows:
        closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        phase = closure.phase or row.phase
        started = _time(closure.started_at, row.started_at)
        out.append(ExecutionSummary(
            project=row.project, domain=row.domain, name=row.name, phase=workflow_phase_name(phase),
            launch_plan=row.launch_plan_name or row.task_name or row.workflow_name,
            created_at=_time(closure.created_at, row.created_at),
            duration=_duration(closure.duration, started, phase not in WORKFLOW_TERMINAL, now),
        ))
    return out


def load_execution(ctx: Context, project: str, domain: str, name: str) -> ExecutionView | None:
    """Everything the execution page shows, or None when there is no such execution."""
    with ctx.db.session() as session:
        row = session.get(Execution, (project, domain, name))
        if row is None:
            return None
        node_rows = session.scalars(select(NodeExecution).where(
            NodeExecution.project == project, NodeExecution.domain == domain,
            NodeExecution.execution_name == name).order_by(NodeExecution.created_at, NodeExecution.id)).all()
        task_rows = session.scalars(select(TaskExecution).where(
            TaskExecution.project == project, TaskExecution.domain == domain,
            TaskExecution.execution_name == name).order_by(TaskExecution.retry_attempt, TaskExecution.id)).all()
        flyte_workflow = session.get(FlyteWorkflow, (project, domain, name))
        compiled_pb = flyte_workflow.closure_pb if flyte_workflow is not None else None
        signal_rows = session.scalars(select(Signal).where(
            Signal.project == project, Signal.domain == domain, Signal.execution_name == name
        ).order_by(Signal.created_at, Signal.signal_id)).all()
        signals = [SignalView(r.signal_id, types_pb2.LiteralType.FromString(r.type_pb),
                              literals_pb2.Literal.FromString(r.value_pb) if r.value_pb is not None else None)
                   for r in signal_rows]

    now = ctx.clock.now()
    closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
    spec = execution_pb2.ExecutionSpec.FromString(row.spec_pb)
    phase = closure.phase or row.phase
    running = phase not in WORKFLOW_TERMINAL
    started = _time(closure.started_at, row.started_at)
    lp = spec.launch_plan
    wf = closure.workflow_id
    view = ExecutionView(
        project=project, domain=domain, name=name, phase=workflow_phase_name(phase), running=running,
        launch_plan=f"{lp.name} ({lp.version})" if lp.name else row.launch_plan_name,
        workflow=f"{wf.name} ({wf.version})" if wf.name else row.workflow_name or row.task_name,
        created_at=_time(closure.created_at, row.created_at), started_at=started,
        duration=_duration(closure.duration, started, running, now),
        inputs=read_data(ctx, row.inputs_uri, closure.computed_inputs if closure.HasField("computed_inputs") else None),
        outputs=read_data(ctx, closure.outputs.uri, closure.outputs.values if closure.outputs.HasField("values")
                          else closure.output_data),
        error=_error(closure.error),
        abort_cause=closure.abort_metadata.cause or closure.abort_cause,
        launch_plan_id=(lp.project, lp.domain, lp.name, lp.version) if lp.name else None,
        workflow_id=(wf.project, wf.domain, wf.name, wf.version) if wf.name else None,
        mode=execution_pb2.ExecutionMetadata.ExecutionMode.Name(spec.metadata.mode),
        reference=spec.metadata.reference_execution.name, tags=list(spec.tags), labels=dict(spec.labels.values),
        archived=row.state == execution_pb2.EXECUTION_ARCHIVED,
        signals=signals,
    )
    if compiled_pb:
        view.compiled_closure = compiler_pb2.CompiledWorkflowClosure.FromString(compiled_pb)
    attempts = _attempts(task_rows, now)
    view.nodes, view.node_count = _node_tree(ctx, node_rows, attempts, now, view.compiled_closure)
    return view


def _attempts(task_rows, now: datetime) -> dict[str, list[AttemptView]]:
    by_node: dict[str, list[AttemptView]] = {}
    for row in task_rows:
        c = task_execution_pb2.TaskExecutionClosure.FromString(row.closure_pb)
        phase = c.phase or row.phase
        running = phase not in TASK_TERMINAL
        started, duration = _span(c, row, running, now)
        by_node.setdefault(row.node_id, []).append(AttemptView(
            retry_attempt=row.retry_attempt, phase=task_phase_name(phase), started_at=started,
            duration=duration,
            logs=[(log.name or "logs", log.uri) for log in c.logs if log.uri],
            error=_error(c.error), reason=c.reason, task=row.task_name, items=_item_counts(c), ended=not running,
            reasons=[(_time(r.occurred_at, None), r.message) for r in c.reasons],
        ))
    return by_node


def _item_counts(closure: task_execution_pb2.TaskExecutionClosure) -> dict[str, int]:
    """Map task items by the phase of each item's latest attempt."""
    latest: dict[int, tuple[int, int]] = {}
    for r in closure.metadata.external_resources:
        if r.index not in latest or r.retry_attempt >= latest[r.index][0]:
            latest[r.index] = (r.retry_attempt, r.phase)
    counts: dict[str, int] = {}
    for _attempt, phase in latest.values():
        name = task_phase_name(phase)
        counts[name] = counts.get(name, 0) + 1
    return counts


# The nodes a level of an execution's node tree runs, by id, the closure whose subworkflows they may name, and
# the workflow they are the nodes of (a branch's arms side by side).
Scope = tuple[dict[str, workflow_pb2.Node], "compiler_pb2.CompiledWorkflowClosure | None",
              "compiler_pb2.CompiledWorkflow | None"]


def _scope(workflow: compiler_pb2.CompiledWorkflow, closure: compiler_pb2.CompiledWorkflowClosure | None) -> Scope:
    return {n.id: n for n in workflow.template.nodes}, closure, workflow


def _children_scope(node: workflow_pb2.Node | None, dynamic_pb: bytes | None, scope: Scope | None) -> Scope | None:
    """The nodes the children of a node execution run: a dynamic node's compiled workflow, a subworkflow's, or a
    branch's arms."""
    if dynamic_pb:
        closure = compiler_pb2.CompiledWorkflowClosure.FromString(dynamic_pb)
        return _scope(closure.primary, closure)
    if node is None or scope is None:
        return None
    target = node.WhichOneof("target")
    if target == "workflow_node" and node.workflow_node.HasField("sub_workflow_ref") and scope[1] is not None:
        ref = node.workflow_node.sub_workflow_ref
        return next((_scope(sub, scope[1]) for sub in scope[1].sub_workflows if sub.template.id == ref), None)
    if target == "branch_node":
        branch = node.branch_node.if_else
        arms = [branch.case.then_node, *(case.then_node for case in branch.other)]
        if branch.HasField("else_node"):
            arms.append(branch.else_node)
        # The arms as a workflow of their own, each between start and end, for the graph of the branch.
        return {arm.id: arm for arm in arms}, scope[1], compiler_pb2.CompiledWorkflow(
            template=workflow_pb2.WorkflowTemplate(nodes=arms))
    return None


def _natural(text: str) -> tuple:
    """A key that orders dn2 before dn10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _node_tree(ctx: Context, node_rows, attempts: dict[str, list[AttemptView]], now: datetime,
               closure: compiler_pb2.CompiledWorkflowClosure | None):
    with_data = len(node_rows) <= MAX_NODES_WITH_DATA
    views: dict[int, NodeView] = {}
    parents: dict[int, int | None] = {}
    # Each level's nodes, by the row of the node execution they are children of (None: the workflow's own).
    scopes: dict[int | None, Scope | None] = {None: _scope(closure.primary, closure) if closure is not None else None}
    for row in node_rows:
        c = node_execution_pb2.NodeExecutionClosure.FromString(row.closure_pb)
        meta = node_execution_pb2.NodeExecutionMetaData.FromString(row.metadata_pb or b"")
        spec_id = meta.spec_node_id or row.node_id
        if spec_id in HIDDEN_NODES or row.node_id in HIDDEN_NODES:
            continue
        phase = c.phase or row.phase
        running = phase not in NODE_TERMINAL
        started, duration = _span(c, row, running, now)
        cache = c.task_node_metadata.cache_status if c.HasField("task_node_metadata") else 0
        node = NodeView(
            row_id=row.id, node_id=row.node_id, spec_node_id=spec_id, phase=node_phase_name(phase),
            started_at=started, duration=duration, error=_error(c.error),
            cache_status=_cache_status_name(cache), deck_uri=c.deck_uri,
            flyte_url=f"flyte://v1/{row.project}/{row.domain}/{row.execution_name}/{row.node_id}",
            attempts=attempts.get(row.node_id, []),
        )
        scope = scopes.get(row.parent_id)
        node.spec = scope[0].get(spec_id) if scope is not None else None
        children = scopes[row.id] = _children_scope(node.spec, row.dynamic_workflow_pb, scope)
        node.graph = children[2] if children is not None else None
        source = c.task_node_metadata.catalog_key.source_task_execution.node_execution_id.execution_id
        if cache == catalog_pb2.CACHE_HIT and source.name:
            node.cache_source = (source.project, source.domain, source.name)
        if with_data:
            node.inputs = read_data(ctx, row.input_uri)
            node.outputs = read_data(ctx, c.output_uri, c.output_data if c.HasField("output_data") else None)
        views[row.id] = node
        parents[row.id] = row.parent_id
    roots: list[NodeView] = []
    for row_id, node in views.items():
        parent_id = parents[row_id]
        parent = views.get(parent_id) if parent_id is not None else None
        (parent.children if parent is not None else roots).append(node)
    # Siblings in the order of their ids, numbers by value (n2 before n10; a dynamic node's children dn0, dn1, ...).
    for siblings in [roots, *(node.children for node in views.values())]:
        siblings.sort(key=lambda node: _natural(node.node_id))
    return roots, len(views)


def _cache_status_name(status: int) -> str:
    if not status:
        return ""
    return catalog_pb2.CatalogCacheStatus.Name(status).removeprefix("CACHE_")


@dataclass
class ActionData:
    """A Flyte 2 action's inputs and outputs (LiteralMaps, None when there are none), and where its report is."""

    inputs: literals_pb2.LiteralMap | None
    outputs: literals_pb2.LiteralMap | None
    report: str | None


def action_data(ctx: Context, action: Action) -> ActionData:
    """A Flyte 2 action's inputs and outputs (flyteidl2's Inputs and Outputs read as the LiteralMaps they are on
    the wire) and where its latest attempt's report is."""
    spec = runs_store.spec(action)
    inputs = ctx.blobs.read_proto_if_exists(spec.input_uri, literals_pb2.LiteralMap) if spec.input_uri else None
    outputs = (ctx.blobs.read_proto_if_exists(ctx.blobs.join(action.output_uri, "outputs.pb"), literals_pb2.LiteralMap)
               if action.output_uri else None)
    key = ExecutionKey(action.project, action.domain, action.run_name)
    report = ctx.blobs.join(runs_store.attempt_prefix(ctx, key, action.name, max(action.attempts, 1)), "report.html")
    return ActionData(inputs, outputs, report if action.attempts and ctx.blobs.exists(report) else None)


@dataclass
class ItemAttemptView:
    retry_attempt: int
    phase: str
    logs: list[tuple[str, str]]
    cache_status: str = ""
    # The item's own execution, for an item of a launch plan (the child execution's name).
    external_id: str = ""


@dataclass
class ItemView:
    index: int
    # The phase of its latest attempt; NOT_STARTED for an item the array has not started yet.
    phase: str
    attempts: list[ItemAttemptView] = field(default_factory=list)
    error: str = ""


@dataclass
class ArrayItemsView:
    """The items of one attempt of an array node (a map task, or an array over launch plans or subworkflows)."""

    project: str
    domain: str
    execution: str
    node_id: str
    node_phase: str
    running: bool
    # The array node's attempt these items belong to, and every attempt it had.
    attempt: int
    attempts: list[int]
    items: list[ItemView]
    # Where item i's data is: item_data_dir(output_dir, i)/<item attempt>/.
    output_dir: str
    input_uri: str
    bound_inputs: frozenset[str] = frozenset()
    # Each item launches an execution of its own (an array over a launch plan), named by its external id.
    launches: bool = False


NOT_STARTED = "NOT_STARTED"


def load_array_items(ctx: Context, project: str, domain: str, name: str, node_id: str,
                     attempt: int | None = None) -> ArrayItemsView | None:
    """The items of an array node's attempt (the latest by default), from its task executions' external
    resources as FlyteAdmin keeps them; None when the execution has no such array node."""
    with ctx.db.session() as session:
        node = session.scalars(select(NodeExecution).where(
            NodeExecution.project == project, NodeExecution.domain == domain, NodeExecution.execution_name == name,
            NodeExecution.node_id == node_id)).first()
        if node is None:
            return None
        task_rows = session.scalars(select(TaskExecution).where(
            TaskExecution.project == project, TaskExecution.domain == domain, TaskExecution.execution_name == name,
            TaskExecution.node_id == node_id).order_by(TaskExecution.retry_attempt, TaskExecution.id)).all()
        compiled = session.get(FlyteWorkflow, (project, domain, name))
        compiled_pb = compiled.closure_pb if compiled is not None else None
    meta = node_execution_pb2.NodeExecutionMetaData.FromString(node.metadata_pb or b"")
    closure = node_execution_pb2.NodeExecutionClosure.FromString(node.closure_pb)
    if not meta.is_array and not task_rows:
        return None
    attempts = [row.retry_attempt for row in task_rows]
    chosen = attempt if attempt is not None else (attempts[-1] if attempts else 0)
    row = next((r for r in task_rows if r.retry_attempt == chosen), None)
    resources = (task_execution_pb2.TaskExecutionClosure.FromString(row.closure_pb).metadata.external_resources
                 if row is not None else [])
    by_index: dict[int, list[ItemAttemptView]] = {}
    for r in resources:
        by_index.setdefault(r.index, []).append(ItemAttemptView(
            retry_attempt=r.retry_attempt, phase=task_phase_name(r.phase),
            logs=[(log.name or "logs", log.uri) for log in r.logs if log.uri],
            cache_status=_cache_status_name(r.cache_status), external_id=r.external_id))
    data_dir = posixpath.dirname(node.input_uri) if node.input_uri else ""
    array = _array_node(compiled_pb, meta.spec_node_id or node_id)
    bound = frozenset(array.bound_inputs) if array is not None else frozenset()
    size = _array_size(ctx, node.input_uri, bound) if node.input_uri else None
    size = max(size or 0, max(by_index, default=-1) + 1)
    items = []
    for index in range(size):
        tries = sorted(by_index.get(index, []), key=lambda a: a.retry_attempt)
        items.append(ItemView(index, tries[-1].phase if tries else NOT_STARTED, tries))
    phase = closure.phase or node.phase
    return ArrayItemsView(project=project, domain=domain, execution=name, node_id=node_id,
                          node_phase=node_phase_name(phase), running=phase not in NODE_TERMINAL, attempt=chosen,
                          attempts=attempts, items=items,
                          output_dir=posixpath.join(data_dir, str(chosen)) if data_dir else "",
                          input_uri=node.input_uri, bound_inputs=bound,
                          launches=array is not None and array.node.workflow_node.HasField("launchplan_ref"))


def _array_node(compiled_pb: bytes | None, spec_node_id: str) -> workflow_pb2.ArrayNode | None:
    """The array node `spec_node_id` of the execution's own workflow or its subworkflows (None for one a
    dynamic node made)."""
    if not compiled_pb:
        return None
    closure = compiler_pb2.CompiledWorkflowClosure.FromString(compiled_pb)
    for workflow in [closure.primary, *closure.sub_workflows]:
        for node in workflow.template.nodes:
            if node.id == spec_node_id and node.HasField("array_node"):
                return node.array_node
    return None


def _array_size(ctx: Context, input_uri: str, bound: frozenset[str]) -> int | None:
    try:
        return array_size(load_inputs(ctx.blobs, input_uri), bound)
    except (FileNotFoundError, ArrayInputError):
        return None


def item_error(ctx: Context, items: ArrayItemsView, index: int, attempt: int) -> str:
    """The error an item's attempt wrote (its ErrorDocument), '' when it wrote none."""
    path = posixpath.join(item_data_dir(items.output_dir, index), str(attempt), "error.pb")
    try:
        doc = ctx.blobs.read_proto_if_exists(path, errors_pb2.ErrorDocument)
    except Exception as exc:  # noqa: BLE001 - an unreadable blob is reported on the page, not a 500
        return f"could not read {path}: {type(exc).__name__}: {exc}"
    if doc is None:
        return ""
    return f"[{doc.error.code}] {doc.error.message}" if doc.error.code else doc.error.message


def item_data(ctx: Context, items: ArrayItemsView, item: ItemView) -> tuple[Data, Data]:
    """An item's own inputs (element `index` of each mapped list) and, once it succeeded, its outputs."""
    index = item.index
    try:
        inputs = Data(uri=items.input_uri, literals=item_inputs(load_inputs(ctx.blobs, items.input_uri), index,
                                                                items.bound_inputs))
    except (FileNotFoundError, IndexError) as exc:
        inputs = Data(uri=items.input_uri, problem=f"the item's inputs cannot be read: {exc}")
    if item.phase != "SUCCEEDED":
        return inputs, Data()
    attempt = item.attempts[-1].retry_attempt
    return inputs, read_data(ctx, posixpath.join(item_data_dir(items.output_dir, index), str(attempt), "outputs.pb"))
