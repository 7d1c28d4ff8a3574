"""Conformance with Flyte's own compiler: compile Flyte's test data and compare with its golden files.

The data (flytepropeller/pkg/compiler/test/testdata at v1.16.8) lives outside the repo in
``<repo>/../shared/conformance/flyte-compiler``; see its README for how Flyte's test uses it. Golden
files are Go jsonpb, so they are compared as parsed protobuf messages.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from flyteidl.admin import task_pb2
from flyteidl.core import compiler_pb2, literals_pb2, tasks_pb2, workflow_closure_pb2
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from flytelite.compiler import compile_task, compile_workflow, get_requirements
from flytelite.compiler.builder import id_key

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "flyte-compiler"
SNACKS = DATA / "snacks-core"
BRANCH = DATA / "branch"

pytestmark = pytest.mark.skipif(
    not SNACKS.is_dir(),
    reason=f"Flyte compiler conformance data not found at {DATA} (expected <repo>/../shared/conformance/flyte-compiler)",
)


def _parse(raw: bytes, msg_type):
    msg = msg_type()
    try:
        msg.ParseFromString(raw)
    except DecodeError:
        return None
    return msg


def _load_snacks() -> tuple[dict[str, tasks_pb2.TaskTemplate], dict[str, workflow_closure_pb2.WorkflowClosure]]:
    tasks, workflows = {}, {}
    if not SNACKS.is_dir():
        return tasks, workflows
    for path in sorted(SNACKS.glob("*.pb")):
        raw = path.read_bytes()
        spec = _parse(raw, task_pb2.TaskSpec)
        if spec is not None:
            tasks[path.stem] = spec.template
            continue
        closure = _parse(raw, workflow_closure_pb2.WorkflowClosure)
        if closure is not None:  # files that are neither (launch plans) are skipped, as in Flyte's test
            workflows[path.stem] = closure
    return tasks, workflows


SNACK_TASKS, SNACK_WORKFLOWS = _load_snacks()


def _with_test_config(task: tasks_pb2.TaskTemplate) -> tasks_pb2.TaskTemplate:
    # Flyte's test appends these container config pairs before compiling.
    t = tasks_pb2.TaskTemplate()
    t.CopyFrom(task)
    if t.HasField("container"):
        for i in (1, 2, 3):
            t.container.config.add(key=f"testKey{i}", value=f"testValue{i}")
    return t


def _golden(path: Path, msg_type):
    return json_format.Parse(path.read_text(), msg_type(), ignore_unknown_fields=True)


def _assert_same(actual, expected) -> None:
    if actual != expected:
        a = json_format.MessageToJson(actual, sort_keys=True).splitlines()
        e = json_format.MessageToJson(expected, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(e, a, "golden", "flytelite", lineterm="", n=2))
        pytest.fail(f"compiled output differs from Flyte's golden file:\n{diff[:6000]}")


def _compiled_snack_tasks() -> dict:
    out = {}
    for template in SNACK_TASKS.values():
        compiled = compile_task(_with_test_config(template))
        out[id_key(compiled.template.id)] = compiled
    return out


@pytest.mark.parametrize("name", sorted(SNACK_TASKS))
def test_snacks_task(name: str) -> None:
    compiled = compile_task(_with_test_config(SNACK_TASKS[name]))
    _assert_same(compiled, _golden(SNACKS / "compiled" / f"{name}_task.json", compiler_pb2.CompiledTask))


@pytest.mark.parametrize("name", sorted(SNACK_WORKFLOWS))
def test_snacks_workflow(name: str) -> None:
    all_tasks = _compiled_snack_tasks()
    workflow = SNACK_WORKFLOWS[name].workflow
    # Like Flyte's test (and flyteadmin): pass the required tasks in requirement order.
    tasks = [all_tasks[id_key(i)] for i in get_requirements(workflow).task_ids]
    closure = compile_workflow(workflow, [], tasks, [])
    _assert_same(closure, _golden(SNACKS / "compiled" / f"{name}_wf.json", compiler_pb2.CompiledWorkflowClosure))
    _assert_connections_cover_nodes(closure)


BRANCH_CASES = sorted(p.stem for p in BRANCH.glob("*.json")) if BRANCH.is_dir() else []


@pytest.mark.parametrize("name", BRANCH_CASES)
def test_branch_workflow(name: str) -> None:
    closure_in = json_format.Parse((BRANCH / f"{name}.json").read_text(), workflow_closure_pb2.WorkflowClosure())
    tasks = [compile_task(_with_test_config(t)) for t in closure_in.tasks]
    closure = compile_workflow(closure_in.workflow, [], tasks, [])
    _assert_same(closure, _golden(BRANCH / "compiled" / f"{name}.json", compiler_pb2.CompiledWorkflowClosure))
    _assert_connections_cover_nodes(closure)


def _has_promise(binding: literals_pb2.BindingData) -> bool:
    kind = binding.WhichOneof("value")
    if kind == "promise":
        return True
    if kind == "collection":
        return any(_has_promise(b) for b in binding.collection.bindings)
    if kind == "map":
        return any(_has_promise(b) for b in binding.map.bindings.values())
    return False


def _walk(node, acc: list) -> None:
    acc.append(node)
    if node.HasField("branch_node"):
        if_else = node.branch_node.if_else
        _walk(if_else.case.then_node, acc)
        for other in if_else.other:
            _walk(other.then_node, acc)
        if if_else.HasField("else_node"):
            _walk(if_else.else_node, acc)


def _assert_connections_cover_nodes(closure: compiler_pb2.CompiledWorkflowClosure) -> None:
    # Flyte's test invariant: nodes with promise inputs appear in the connections, and every id
    # in the connections is a node.
    nodes: list = []
    for n in closure.primary.template.nodes:
        _walk(n, nodes)
    all_ids = {n.id for n in nodes}
    with_deps = {n.id for n in nodes if any(_has_promise(b.binding) for b in n.inputs)}
    conns = closure.primary.connections
    seen = set()
    for m in (conns.upstream, conns.downstream):
        for key, ids in m.items():
            seen.add(key)
            seen.update(ids.ids)
    assert with_deps <= seen
    assert seen <= all_ids


DYNAMIC = DATA / "dynamic" / "success_1.json"


@pytest.mark.skipif(not DYNAMIC.is_file(), reason=f"{DYNAMIC} not found")
def test_dynamic_job_spec_compiles() -> None:
    # Flyte's TestDynamic: wrap a DynamicJobSpec's nodes in a workflow with one List[int] output.
    from flyteidl.core import dynamic_job_pb2, identifier_pb2, workflow_pb2

    spec = json_format.Parse(DYNAMIC.read_text(), dynamic_job_pb2.DynamicJobSpec(), ignore_unknown_fields=True)
    tasks = [compile_task(_with_test_config(t)) for t in spec.tasks]
    wf = workflow_pb2.WorkflowTemplate(id=identifier_pb2.Identifier(domain="domain", name="name", version="version"))
    wf.interface.inputs.SetInParent()
    wf.interface.outputs.variables["o0"].type.collection_type.simple = 1  # INTEGER
    wf.nodes.extend(spec.nodes)
    wf.outputs.extend(spec.outputs)
    closure = compile_workflow(wf, list(spec.subworkflows), tasks, [])
    assert closure.primary.template.nodes[0].id == "start-node"
    _assert_connections_cover_nodes(closure)
