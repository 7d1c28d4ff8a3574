"""Compiling a dynamic task's futures.pb into a workflow (FlytePropeller's dynamic/dynamic_workflow.go).

The DynamicJobSpec's nodes and output bindings become a workflow named `dynamic_<node id>` whose
interface is the parent task's outputs. It is compiled with flytelite.compiler like a registered
workflow: with the tasks in the spec (which inherit the parent task's container config, as in
Flyte), any other task it references (from the running closure, else as registered with admin: the
engine's tasks.Reader), the spec's subworkflows and the interfaces of the launch plans it calls (the
engine's launchplan.Reader, as FlytePropeller's dynamic handler uses it). The result is stored
beside the futures as dynamic_compiled.pb, so a restarted engine runs exactly the same workflow.
"""

from __future__ import annotations

import hashlib

from flyteidl.core import compiler_pb2, dynamic_job_pb2, identifier_pb2, interface_pb2, workflow_pb2

from flytelite.compiler import CompileError, compile_task, compile_workflow, get_requirements
from flytelite.idl.ids import describe
from flytelite.propeller.nodes.handler import NodeExecutionContext
from flytelite.propeller.sized import SizedCache
from flytelite.propeller.workflow import ExecutableWorkflow, task_key
from flytelite.storage import BlobStore

FUTURES_NAME = "futures.pb"
COMPILED_NAME = "dynamic_compiled.pb"
# Compiled dynamic workflows kept in memory while their nodes run, by URI, up to CACHE_NODES nodes in all (a
# dropped one is read again from its blob).
CACHE_NODES = 50_000
_cache: SizedCache[str, ExecutableWorkflow] = SizedCache(CACHE_NODES)


class DynamicBuildError(Exception):
    """The futures cannot become a workflow (a user error: the spec is malformed or names missing entities)."""


def build_dynamic_workflow(nctx: NodeExecutionContext, futures_uri: str) -> compiler_pb2.CompiledWorkflowClosure:
    """Compile the node's futures.pb and store it as dynamic_compiled.pb beside it."""
    blobs = nctx.blobs
    raw = blobs.read_bytes(futures_uri)
    try:
        spec = dynamic_job_pb2.DynamicJobSpec.FromString(raw)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError and friends
        raise DynamicBuildError(f"unable to read futures file {futures_uri}, maybe corrupted: {e}") from None
    parent = nctx.task
    project, domain, _ = nctx.round.key
    template = workflow_pb2.WorkflowTemplate(
        id=identifier_pb2.Identifier(
            resource_type=identifier_pb2.WORKFLOW, project=project, domain=domain,
            name=f"dynamic_{nctx.node_id}", version=hashlib.sha256(raw).hexdigest()[:10]),
        nodes=spec.nodes, outputs=spec.outputs,
        interface=interface_pb2.TypedInterface(
            inputs=interface_pb2.VariableMap(), outputs=parent.interface.outputs if parent is not None else None),
    )
    try:
        tasks = _compiled_tasks(nctx, spec, parent)
        reqs = get_requirements(template, list(spec.subworkflows))
        tasks += _referenced_tasks(nctx, reqs.task_ids, {task_key(t.template.id) for t in tasks})
        launch_plans = _launch_plans(nctx, reqs.launch_plan_ids)
        closure = compile_workflow(template, list(spec.subworkflows), tasks, launch_plans)
    except CompileError as e:
        raise DynamicBuildError(f"malformed dynamic workflow:\n{e}") from None
    compiled_uri = futures_uri[: -len(FUTURES_NAME)] + COMPILED_NAME
    blobs.write_proto(compiled_uri, closure)
    dag = ExecutableWorkflow(closure)
    _cache.put(compiled_uri, dag, len(dag.nodes))
    return closure


def load_dynamic_workflow(blobs: BlobStore, compiled_uri: str) -> ExecutableWorkflow | None:
    found = _cache.get(compiled_uri)
    if found is not None:
        return found
    closure = blobs.read_proto_if_exists(compiled_uri, compiler_pb2.CompiledWorkflowClosure)
    if closure is None:
        return None
    dag = ExecutableWorkflow(closure)
    _cache.put(compiled_uri, dag, len(dag.nodes))
    return dag


def forget_dynamic_workflow(compiled_uri: str) -> None:
    """The node that ran this workflow is done: nothing reads it from memory again."""
    _cache.pop(compiled_uri)


def _compiled_tasks(nctx: NodeExecutionContext, spec: dynamic_job_pb2.DynamicJobSpec, parent) -> list:
    tasks, seen = [], set()
    for template in spec.tasks:
        key = task_key(template.id)
        if key in seen:
            continue
        seen.add(key)
        if template.HasField("container") and parent is not None and parent.HasField("container"):
            # Children inherit what the parent task's container was configured with (Flyte does the same).
            template.container.config.extend(parent.container.config)
        tasks.append(compile_task(template))
    return tasks


def _referenced_tasks(nctx: NodeExecutionContext, task_ids: list, have: set) -> list[compiler_pb2.CompiledTask]:
    """Tasks the spec calls without carrying them: from the running closure, else registered ones."""
    found, missing = [], []
    known = nctx.round.workflow.tasks
    reader = nctx.round.clients.task_reader
    for ident in task_ids:
        key = task_key(ident)
        if key in have:
            continue
        have.add(key)
        if key in known:
            found.append(compiler_pb2.CompiledTask(template=known[key]))
            continue
        registered = reader.get_task(ident)
        if registered is None:
            missing.append(describe(ident))
        else:
            found.append(registered.closure.compiled_task)
    if missing:
        raise DynamicBuildError(f"the dynamic workflow calls tasks that are not registered: {'; '.join(missing)}")
    return found


def _launch_plans(nctx: NodeExecutionContext, ids: list) -> list:
    found, missing = [], []
    reader = nctx.round.clients.launch_plan_reader
    for ident in ids:
        lp = reader.get_launch_plan(ident)
        if lp is None:
            missing.append(describe(ident))
        else:
            found.append(lp)
    if missing:
        raise DynamicBuildError(f"the dynamic workflow calls launch plans that are not registered: "
                                f"{'; '.join(missing)}")
    return found
