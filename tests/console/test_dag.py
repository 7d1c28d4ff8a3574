"""The workflow graph: longest-path layering and the SVG the execution page shows (pure)."""

from __future__ import annotations

import re

from flyteidl.core import compiler_pb2, identifier_pb2, workflow_pb2

from flytelite.console.dag import dag_nodes, layers, render_dag


def task_node(node_id: str, task: str, *upstream: str) -> workflow_pb2.Node:
    ref = identifier_pb2.Identifier(resource_type=identifier_pb2.TASK, name=f"wf.{task}")
    return workflow_pb2.Node(id=node_id, upstream_node_ids=list(upstream),
                             task_node=workflow_pb2.TaskNode(reference_id=ref))


def diamond(with_connections: bool) -> compiler_pb2.CompiledWorkflow:
    nodes = [task_node("n0", "start"), task_node("n1", "left", "n0"), task_node("n2", "right", "n0"),
             task_node("n3", "join", "n1", "n2")]
    compiled = compiler_pb2.CompiledWorkflow(template=workflow_pb2.WorkflowTemplate(nodes=nodes))
    if with_connections:
        ups = {"n0": ["start-node"], "n1": ["n0"], "n2": ["n0"], "n3": ["n1", "n2"], "end-node": ["n3"]}
        for node_id, up in ups.items():
            compiled.connections.upstream[node_id].ids.extend(up)
    return compiled


def test_longest_path_layers_with_or_without_compiled_connections():
    for with_connections in (True, False):
        depth = layers(dag_nodes(diamond(with_connections)))
        assert depth == {"start-node": 0, "n0": 1, "n1": 2, "n2": 2, "n3": 3, "end-node": 4}


def test_svg_colours_nodes_by_phase_and_draws_every_edge():
    svg = render_dag(diamond(True), {"n0": "SUCCEEDED", "n1": "RUNNING", "n2": "FAILED", "n3": "SKIPPED"})
    phases = dict(re.findall(r"data-node='([^']+)' data-phase='([^']+)'", svg))
    assert phases == {"start-node": "SUCCEEDED", "n0": "SUCCEEDED", "n1": "RUNNING", "n2": "FAILED",
                      "n3": "SKIPPED", "end-node": "NOT_STARTED"}
    assert "class='dag-node n-run' data-node='n1'" in svg and "class='dag-node n-bad' data-node='n2'" in svg
    assert "class='dag-node n-skip' data-node='n3'" in svg
    edges = set(re.findall(r"data-from='([^']+)' data-to='([^']+)'", svg))
    assert edges == {("start-node", "n0"), ("n0", "n1"), ("n0", "n2"), ("n1", "n3"), ("n2", "n3"), ("n3", "end-node")}
    assert ">join<" in svg  # nodes are labelled by their task's short name


def test_labels_are_escaped():
    compiled = compiler_pb2.CompiledWorkflow(template=workflow_pb2.WorkflowTemplate(
        nodes=[task_node("n0", "<script>")]))
    svg = render_dag(compiled, {})
    assert "<script>" not in svg and "&lt;script&gt;" in svg
