"""An execution as a FlyteWorkflow object (propeller/crd/flyteworkflow.py), in FlytePropeller's JSON shape."""

from __future__ import annotations

import json

from flytelite.idl.error_kinds import ErrorInfo
from flytelite.propeller.crd import flyteworkflow as fw
from flytelite.propeller.phases import NodeStatusPhase, WorkflowStatusPhase
from flytelite.propeller.status import NodeStatus, WorkflowStatus
from flytelite.store.flyteworkflow import ExecutionSpec
from tests.propeller import dag_workflows as dw
from tests.propeller import harness as h
from tests.propeller import nested_workflows as nw

SPEC = ExecutionSpec(project="flytesnacks", domain="development", name="name", inputs_uri="local:///i/inputs.pb",
                     raw_output_prefix="s3://bucket/raw", labels={"Team": "ML"}, service_account="runner",
                     max_parallelism=7)


def test_the_spec_is_the_compiled_workflow_as_flytepropeller_reads_it():
    closure = h.compile_entity(dw.fan_out)
    obj = fw.flyte_workflow("flytesnacks-development", closure, SPEC, {"literals": {}})
    assert (obj["apiVersion"], obj["kind"]) == ("flyte.lyft.com/v1alpha1", "FlyteWorkflow")
    meta = obj["metadata"]
    assert (meta["name"], meta["namespace"]) == ("name", "flytesnacks-development")
    assert meta["labels"]["shard-key"] == "6"  # FlytePropeller's own test vector for "name"
    assert meta["labels"]["execution-id"] == "name" and meta["labels"]["Team"] == "ML"
    spec = obj["spec"]
    template = closure.primary.template
    assert spec["id"] == f"flytesnacks:development:{template.id.name}"
    assert {n["kind"] for n in spec["nodes"].values()} == {"start", "end", "task"}
    task_nodes = [n for n in spec["nodes"].values() if n["kind"] == "task"]
    assert task_nodes and all(n["task"] in obj["tasks"] for n in task_nodes)
    assert spec["edges"]["upstream"]["end-node"] and spec["connections"]["start-node"]
    assert obj["executionConfig"]["MaxParallelism"] == 7
    assert obj["securityContext"] == {"run_as": {"k8s_service_account": "runner"}}
    assert obj["serviceAccountName"] == "runner" and obj["status"] == {"phase": 0}
    json.dumps(obj)  # what the apiserver is sent


def test_branches_and_dynamic_nodes_keep_their_kind():
    obj = fw.flyte_workflow("ns", h.compile_entity(nw.nst_branches), SPEC, None)
    kinds = {n["kind"] for n in obj["spec"]["nodes"].values()}
    assert "branch" in kinds
    branch = next(n for n in obj["spec"]["nodes"].values() if n["kind"] == "branch")["branch"]
    arms = [branch["if"]["then"], *(b["then"] for b in branch.get("elseIf", [])), branch.get("else")]
    assert branch["if"]["condition"] and all(arm in obj["spec"]["nodes"] for arm in arms if arm)


def test_an_offloaded_closure_is_referenced_not_inlined():
    obj = fw.flyte_workflow("ns", h.compile_entity(dw.fan_out), SPEC, None, closure_uri="s3://b/metadata/admin/x")
    assert obj["spec"] is None and obj["tasks"] is None and "subWorkflows" not in obj
    assert obj["workflowClosureReference"] == "s3://b/metadata/admin/x"


def test_the_status_carries_flytepropellers_phase_numbers():
    status = WorkflowStatus(phase=WorkflowStatusPhase.FAILED, started_at="2026-11-25T12:00:00Z",
                            data_dir="s3://b/m/x",
                            error=ErrorInfo("Boom", "it broke", 1),
                            nodes={"n0": NodeStatus(phase=NodeStatusPhase.SUCCEEDED, attempts=1),
                                   "n1": NodeStatus(phase=NodeStatusPhase.FAILED, attempts=2,
                                                    message="x" * 2000)})
    got = fw.status_json(status)
    assert got["phase"] == 5 and got["startedAt"] == "2026-11-25T12:00:00Z" and got["dataDir"] == "s3://b/m/x"
    assert got["error"] == {"code": "Boom", "message": "it broke", "kind": "USER"}
    assert got["nodeStatus"]["n0"] == {"phase": 5, "attempts": 1}
    assert got["nodeStatus"]["n1"]["phase"] == 6 and len(got["nodeStatus"]["n1"]["message"]) == 1024
    assert fw.phase_label(status) == "Failed"
