"""An execution as a `flyteworkflows.flyte.lyft.com/v1alpha1` object, in the JSON shape FlyteAdmin creates
and FlytePropeller updates (flytepropeller/pkg/apis/flyteworkflow/v1alpha1, compiler/transformers/k8s).

The spec is the compiled workflow as FlytePropeller reads it: `spec` (id `project:domain:name`, nodes by
id with their kind, task reference and bindings, connections, edges, outputs), `tasks` keyed by the task
identifier's protobuf text, `subWorkflows`, `inputs`, `executionId`, `executionConfig`. The status carries
the workflow's phase and each node's phase in FlytePropeller's numbering (flytelite's engine uses the
same numbers). A spec too large for one object is offloaded as FlyteAdmin offloads it: `spec`, `tasks`
and `subWorkflows` are left out and `workflowClosureReference` names the closure in the blob store.
"""

from __future__ import annotations

from typing import Any

from flyteidl.core import compiler_pb2, identifier_pb2, workflow_pb2
from google.protobuf import text_format
from google.protobuf.json_format import MessageToDict

from flytelite.idl.ids import END_NODE, START_NODE
from flytelite.plugins.kubernetes.names import fnv1a_32, label_value
from flytelite.propeller.status import NodeStatus, WorkflowStatus
from flytelite.store.flyteworkflow import ExecutionSpec

API_VERSION = "flyte.lyft.com/v1alpha1"
KIND = "FlyteWorkflow"
SHARD_KEYSPACE = 32
# Objects larger than this keep their closure in the blob store (etcd's request limit is 1.5 MiB).
MAX_INLINE_BYTES = 1024 * 1024
MAX_MESSAGE = 1024

# The CustomResourceDefinition FlytePropeller's charts install, plus printer columns so that
# `kubectl get flyteworkflows` shows each execution's phase (the upstream CRD has none).
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "flyteworkflows.flyte.lyft.com"},
    "spec": {
        "group": "flyte.lyft.com",
        "names": {"kind": KIND, "plural": "flyteworkflows", "singular": "flyteworkflow", "shortNames": ["fly"]},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "additionalPrinterColumns": [
                {"name": "Phase", "type": "string", "jsonPath": ".metadata.labels.flytelite\\.io/phase"},
                {"name": "Workflow", "type": "string", "jsonPath": ".spec.id"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
        }],
    },
}
WORKFLOW_PHASE_NAMES = ("Ready", "Running", "Succeeding", "Succeeded", "Failing", "Failed", "Aborted",
                        "HandlingFailureNode")


def _proto(message) -> dict:
    return MessageToDict(message)


def task_ref(identifier: identifier_pb2.Identifier) -> str:
    """A task's key in `tasks` and in a task node: the identifier's protobuf text, on one line."""
    return text_format.MessageToString(identifier, as_one_line=True)


def _node_kind(node: workflow_pb2.Node) -> str:
    if node.id == START_NODE:
        return "start"
    if node.id == END_NODE:
        return "end"
    return {"task_node": "task", "branch_node": "branch", "workflow_node": "workflow", "gate_node": "gate",
            "array_node": "array"}.get(node.WhichOneof("target") or "", "task")


def _node_spec(node: workflow_pb2.Node) -> dict:
    spec: dict[str, Any] = {"id": node.id, "resources": {}, "kind": _node_kind(node)}
    if node.metadata.name:
        spec["name"] = node.metadata.name
    if len(node.inputs):
        spec["inputBindings"] = [_proto(b) for b in node.inputs]
    if node.metadata.retries.retries:
        spec["retry"] = {"minAttempts": node.metadata.retries.retries + 1}
    if node.metadata.HasField("timeout"):
        spec["executionDeadline"] = f"{node.metadata.timeout.ToSeconds()}s"
    if node.metadata.HasField("interruptible"):
        spec["interruptible"] = node.metadata.interruptible
    if node.HasField("task_node"):
        spec["task"] = task_ref(node.task_node.reference_id)
    elif node.HasField("workflow_node"):
        wf = node.workflow_node
        spec["workflow"] = ({"launchPlanRefId": _proto(wf.launchplan_ref)} if wf.HasField("launchplan_ref")
                            else {"subWorkflowRef": task_ref(wf.sub_workflow_ref)})
    elif node.HasField("branch_node"):
        spec["branch"] = _branch(node.branch_node.if_else)
    elif node.HasField("gate_node"):
        gate = node.gate_node
        kind = gate.WhichOneof("condition") or ""
        spec["gate"] = {"kind": kind, kind: _proto(getattr(gate, kind))} if kind else {}
    elif node.HasField("array_node"):
        spec["array"] = {"SubNodeSpec": _node_spec(node.array_node.node),
                         "Parallelism": node.array_node.parallelism or None}
    return spec


def _branch(block: workflow_pb2.IfElseBlock) -> dict:
    """FlytePropeller's BranchNodeSpec: conditions and the ids of the nodes they lead to."""
    out: dict[str, Any] = {"if": {"condition": _proto(block.case.condition), "then": block.case.then_node.id}}
    if len(block.other):
        out["elseIf"] = [{"condition": _proto(b.condition), "then": b.then_node.id} for b in block.other]
    if block.HasField("else_node"):
        out["else"] = block.else_node.id
    elif block.HasField("error"):
        out["elseFail"] = {"failed_node_id": block.error.failed_node_id, "message": block.error.message}
    return out


def _branch_arms(node: workflow_pb2.Node) -> list[workflow_pb2.Node]:
    """The nodes a branch leads to, and theirs (FlytePropeller keeps them beside the branch in `nodes`)."""
    if not node.HasField("branch_node"):
        return []
    block = node.branch_node.if_else
    arms = [block.case.then_node, *(b.then_node for b in block.other)]
    if block.HasField("else_node"):
        arms.append(block.else_node)
    return [n for arm in arms for n in (arm, *_branch_arms(arm))]


def _workflow_spec(compiled: compiler_pb2.CompiledWorkflow) -> dict:
    template = compiled.template
    every = [n for top in template.nodes for n in (top, *_branch_arms(top))]
    nodes = {n.id: _node_spec(n) for n in every}
    nodes.setdefault(START_NODE, {"id": START_NODE, "resources": {}, "kind": "start"})
    nodes.setdefault(END_NODE, {"id": END_NODE, "resources": {}, "kind": "end",
                                "inputBindings": [_proto(b) for b in template.outputs]})
    downstream = {k: list(v.ids) for k, v in compiled.connections.downstream.items()}
    upstream = {k: list(v.ids) for k, v in compiled.connections.upstream.items()}
    spec: dict[str, Any] = {
        "id": f"{template.id.project}:{template.id.domain}:{template.id.name}",
        "nodes": nodes, "connections": downstream, "edges": {"downstream": downstream, "upstream": upstream},
        "outputs": _proto(template.interface.outputs), "outputBindings": [_proto(b) for b in template.outputs],
    }
    if template.HasField("failure_node"):
        spec["onFailure"] = _node_spec(template.failure_node)
    if template.metadata.on_failure:
        spec["onFailurePolicy"] = workflow_pb2.WorkflowMetadata.OnFailurePolicy.Name(template.metadata.on_failure)
    return spec


def _common(out: dict, status: NodeStatus | WorkflowStatus, **fields) -> dict:
    """`out` with the fields that are set, the message (cut as FlytePropeller cuts it) and the error."""
    out.update({k: v for k, v in fields.items() if v})
    if status.message:
        out["message"] = status.message[:MAX_MESSAGE]
    if status.error is not None:
        out["error"] = _proto(status.error.to_proto())
    return out


def _node_status(status: NodeStatus) -> dict:
    out = _common({"phase": int(status.phase)} if status.phase else {}, status,
                  queuedAt=status.queued_at, startedAt=status.started_at, stoppedAt=status.stopped_at,
                  laStartedAt=status.last_attempt_started_at, attempts=status.attempts,
                  systemFailures=status.system_failures)
    if status.sub_nodes:
        out["subNodeStatus"] = {k: _node_status(v) for k, v in status.sub_nodes.items()}
    if status.branch_taken:
        out["branchStatus"] = {"phase": 1, "finalNodeId": status.branch_taken}
    return out


def status_json(status: WorkflowStatus) -> dict:
    out = _common({"phase": int(status.phase)}, status, startedAt=status.started_at, stoppedAt=status.stopped_at,
                  dataDir=status.data_dir, outputRef=status.output_uri, failedAttempts=status.failed_attempts)
    out["nodeStatus"] = {k: _node_status(v) for k, v in status.nodes.items()}
    out["defVersion"] = 1
    return out


def phase_label(status: WorkflowStatus) -> str:
    phase = int(status.phase)
    return WORKFLOW_PHASE_NAMES[phase] if 0 <= phase < len(WORKFLOW_PHASE_NAMES) else str(phase)


def flyte_workflow(namespace: str, closure: compiler_pb2.CompiledWorkflowClosure, spec: ExecutionSpec,
                   inputs: dict | None, closure_uri: str = "") -> dict:
    """The object FlyteAdmin would create for this execution (status Ready); with `closure_uri` the
    closure is referenced instead of inlined (FlyteAdmin's offloading)."""
    template = closure.primary.template
    labels = {**spec.labels,
              "execution-id": spec.name, "project": spec.project, "domain": spec.domain,
              "workflow-name": label_value(template.id.name),
              "shard-key": str(fnv1a_32(spec.name.encode()) % SHARD_KEYSPACE),
              "flytelite.io/phase": "Ready"}
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": spec.name, "namespace": namespace, "labels": labels,
                     "annotations": dict(spec.annotations)},
        "spec": None, "tasks": None,
        "workflowMeta": {"eventVersion": 2},
        "executionId": {"project": spec.project, "domain": spec.domain, "name": spec.name},
        "node-defaults": {"interruptible": True} if spec.interruptible else {},
        "securityContext": ({"run_as": {"k8s_service_account": spec.service_account}}
                            if spec.service_account else {}),
        "status": {"phase": 0},
        "rawOutputDataConfig": {"output_location_prefix": spec.raw_output_prefix},
        "executionConfig": {"TaskPluginImpls": {}, "MaxParallelism": spec.max_parallelism, "RecoveryExecution": {},
                            "Interruptible": spec.interruptible, "OverwriteCache": spec.overwrite_cache,
                            "EnvironmentVariables": dict(spec.envs) or None},
    }
    if spec.service_account:
        obj["serviceAccountName"] = spec.service_account
    if inputs is not None:
        obj["inputs"] = inputs
    if closure_uri:
        obj["workflowClosureReference"] = closure_uri
    else:
        obj["spec"] = _workflow_spec(closure.primary)
        obj["tasks"] = {task_ref(t.template.id): _proto(t.template) for t in closure.tasks}
        if len(closure.sub_workflows):
            obj["subWorkflows"] = {task_ref(w.template.id): _workflow_spec(w) for w in closure.sub_workflows}
    return obj
