"""Single-task executions: the one-node workflow `.flytegen.<task>` FlyteAdmin synthesises for a task.

`pyflyte run --remote file.py some_task` asks for an execution whose
`spec.launch_plan` is the task's id. Like FlyteAdmin, we store (once per task
version) a workflow named `.flytegen.<task name>` with a single node running
the task, and a default launch plan of the same name, both registered through
the ordinary registration path and marked SYSTEM_GENERATED; the execution then
runs that launch plan.
"""

from __future__ import annotations

from flyteidl.admin import common_pb2, launch_plan_pb2
from flyteidl.admin import workflow_pb2 as admin_wf
from flyteidl.core import identifier_pb2 as idpb
from flyteidl.core import interface_pb2, literals_pb2, tasks_pb2, types_pb2, workflow_pb2

from flytelite.admin.launch_plans import create_launch_plan
from flytelite.admin.tasks import get_task
from flytelite.admin.workflows import create_workflow
from flytelite.context import Context
from flytelite.idl import ids
from flytelite.store import entities
from flytelite.store.models import LaunchPlan

MAX_NODE_ID_LENGTH = 63
# FlyteAdmin's retry budget for the synthesised node when the task sets none.
DEFAULT_RETRIES = 3


def generated_name(task_name: str) -> str:
    return f".flytegen.{task_name}"


def node_id_for_task(task_name: str) -> str:
    """FlyteAdmin's node id: the task name's last 63 characters, keeping letters, digits and '-'."""
    tail = task_name[-MAX_NODE_ID_LENGTH:]
    return "".join(ch for ch in tail if ch == "-" or ch.isalnum())


def single_task_workflow(task_id: idpb.Identifier, template: tasks_pb2.TaskTemplate) -> workflow_pb2.WorkflowTemplate:
    """The one-node workflow template that runs `template` with the workflow's inputs as its inputs."""
    node_id = node_id_for_task(task_id.name)
    wf = workflow_pb2.WorkflowTemplate(
        id=ids.identifier(ids.WORKFLOW, task_id.project, task_id.domain, generated_name(task_id.name),
                          task_id.version),
        interface=template.interface,
    )
    node = wf.nodes.add(id=node_id)
    node.metadata.name = node_id
    if template.metadata.HasField("retries"):
        node.metadata.retries.CopyFrom(template.metadata.retries)
    else:
        node.metadata.retries.retries = DEFAULT_RETRIES
    node.task_node.reference_id.CopyFrom(task_id)
    for var in sorted(template.interface.inputs.variables):
        # An empty node id in a promise means "the workflow's inputs".
        node.inputs.add(var=var).binding.promise.CopyFrom(_promise("", var))
    for var in sorted(template.interface.outputs.variables):
        wf.outputs.add(var=var).binding.promise.CopyFrom(_promise(node_id, var))
    return wf


def _promise(node_id: str, var: str) -> types_pb2.OutputReference:
    return types_pb2.OutputReference(node_id=node_id, var=var)


def ensure_single_task_launch_plan(ctx: Context, task_id: idpb.Identifier) -> idpb.Identifier:
    """Register the `.flytegen` workflow and launch plan of this task version if missing; return the plan's id."""
    name = generated_name(task_id.name)
    lp_id = ids.identifier(ids.LAUNCH_PLAN, task_id.project, task_id.domain, name, task_id.version)
    with ctx.db.session() as session:
        if entities.entity_row(session, LaunchPlan, lp_id) is not None:
            return lp_id
    task = get_task(ctx, ids.identifier(ids.TASK, *ids.entity_key(task_id)))
    wf_template = single_task_workflow(task.id, task.closure.compiled_task.template)
    # Registered like any workflow and launch plan (compiled, stored once; a concurrent
    # execution of the same task registers identical content, which is accepted).
    create_workflow(ctx, wf_template.id, admin_wf.WorkflowSpec(template=wf_template))
    create_launch_plan(ctx, lp_id, launch_plan_pb2.LaunchPlanSpec(
        workflow_id=wf_template.id,
        entity_metadata=launch_plan_pb2.LaunchPlanMetadata(),
        default_inputs=interface_pb2.ParameterMap(),
        fixed_inputs=literals_pb2.LiteralMap(),
        labels=common_pb2.Labels(),
        annotations=common_pb2.Annotations(),
    ))
    with ctx.db.session() as session:
        for resource_type in (ids.WORKFLOW, ids.LAUNCH_PLAN):
            entities.set_named_entity_metadata(session, resource_type, task_id.project, task_id.domain, name,
                                               state=common_pb2.SYSTEM_GENERATED)
    return lp_id


