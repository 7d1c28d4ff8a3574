"""A workflow's DAG as inline SVG: nodes placed by longest-path layering, coloured by phase (pure).

The graph comes from the compiled workflow (its connections, or the nodes'
upstream ids when a closure carries none). Each node is a `<g class="dag-node">`
with `data-node` and `data-phase`, so pages and tests can find it by id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flyteidl.core import compiler_pb2, workflow_pb2

from flytelite.console.layout import entity_url, esc, phase_class
from flytelite.console.views import NodeView
from flytelite.idl.ids import END_NODE, START_NODE

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 170, 44, 60, 18, 10


@dataclass(frozen=True)
class DagNode:
    id: str
    label: str
    kind: str
    upstream: tuple[str, ...]


def node_kind(node: workflow_pb2.Node) -> tuple[str, str]:
    """(kind, detail) of a workflow node, as the console names them."""
    target = node.WhichOneof("target")
    if target == "task_node":
        return "task", node.task_node.reference_id.name.rsplit(".", 1)[-1]
    if target == "workflow_node":
        ref = node.workflow_node.WhichOneof("reference")
        ident = getattr(node.workflow_node, ref) if ref else None
        return ("launch plan" if ref == "launchplan_ref" else "subworkflow"), (ident.name.rsplit(".", 1)[-1]
                                                                                if ident else "")
    if target == "branch_node":
        return "branch", ""
    if target == "gate_node":
        return "gate", node.gate_node.WhichOneof("condition") or ""
    if target == "array_node":
        inner = node_kind(node.array_node.node)[1]
        # flytekit names map tasks map_<task>_<hash>-arraynode; the task's name is what a reader knows.
        return "map", re.sub(r"^map_|_[0-9a-f]{32}(-arraynode)?$", "", inner)
    return (target or "node").removesuffix("_node"), ""


def node_label(node: NodeView) -> str:
    """A node as flyteconsole names it: its task's or subworkflow's name (what a node kind without one is), its
    id beside it."""
    if node.spec is None:
        ids = esc(node.spec_node_id)
        return ids + (f" <span class='muted'>({esc(node.node_id)})</span>" if node.node_id != node.spec_node_id else "")
    kind, detail = node_kind(node.spec)
    about = node.node_id + (f" · {kind}" if detail and kind != "task" else "")
    name = esc(detail or kind)
    entity = _entity_of(node.spec)
    if entity is not None:
        name = f"<a href='{esc(entity_url(*entity))}'>{name}</a>"
    return f"<span class='node-name'>{name}</span> <span class='muted'>{esc(about)}</span>"


def _entity_of(node: workflow_pb2.Node) -> tuple[str, str, str, str, str] | None:
    """The registered entity a node runs, as entity_url's arguments: its task (a map task's too), launch plan or
    subworkflow."""
    if node.HasField("array_node"):
        node = node.array_node.node
    target = node.WhichOneof("target")
    if target == "task_node":
        kind, ident = "task", node.task_node.reference_id
    elif target == "workflow_node":
        launch_plan = node.workflow_node.HasField("launchplan_ref")
        kind = "launch_plan" if launch_plan else "workflow"
        ident = node.workflow_node.launchplan_ref if launch_plan else node.workflow_node.sub_workflow_ref
    else:
        return None
    return (kind, ident.project, ident.domain, ident.name, ident.version) if ident.name else None


def dag_nodes(compiled: compiler_pb2.CompiledWorkflow) -> list[DagNode]:
    template = compiled.template
    upstream = {k: tuple(v.ids) for k, v in compiled.connections.upstream.items()}
    nodes: list[DagNode] = [DagNode(START_NODE, "start", "start", ())]
    ids = {n.id for n in template.nodes}
    for node in template.nodes:
        if node.id in (START_NODE, END_NODE):
            continue
        kind, detail = node_kind(node)
        ups = upstream.get(node.id) or tuple(node.upstream_node_ids) or (START_NODE,)
        known = tuple(u for u in ups if u in ids or u == START_NODE)
        nodes.append(DagNode(node.id, detail or node.id, kind, known))
    # The end node waits for the nodes that nothing else waits for (or what the compiler recorded).
    consumed = {u for n in nodes for u in n.upstream}
    end_ups = (upstream.get(END_NODE) or tuple(n.id for n in nodes if n.id not in consumed and n.id != START_NODE)
               or (START_NODE,))
    nodes.append(DagNode(END_NODE, "end", "end", tuple(end_ups)))
    return nodes


def layers(nodes: list[DagNode]) -> dict[str, int]:
    """Longest path from the start for every node (cycles, which compiled workflows never have, are cut)."""
    by_id = {n.id: n for n in nodes}
    depth: dict[str, int] = {}
    visiting: set[str] = set()

    def visit(node_id: str) -> int:
        if node_id in depth:
            return depth[node_id]
        if node_id in visiting or node_id not in by_id:
            return 0
        visiting.add(node_id)
        ups = by_id[node_id].upstream
        depth[node_id] = 1 + max((visit(u) for u in ups), default=-1)
        visiting.discard(node_id)
        return depth[node_id]

    for n in nodes:
        visit(n.id)
    return depth


def render_dag(compiled: compiler_pb2.CompiledWorkflow, phases: dict[str, str]) -> str:
    """The SVG; `phases` maps node id to NodePhase name (missing: not started)."""
    nodes = dag_nodes(compiled)
    depth = layers(nodes)
    columns: dict[int, list[DagNode]] = {}
    for n in nodes:
        columns.setdefault(depth[n.id], []).append(n)
    rows = max(len(c) for c in columns.values())
    height = PAD * 2 + rows * NODE_H + (rows - 1) * GAP_Y
    width = PAD * 2 + len(columns) * NODE_W + (len(columns) - 1) * GAP_X
    pos: dict[str, tuple[int, int]] = {}
    for col, members in columns.items():
        column_height = len(members) * NODE_H + (len(members) - 1) * GAP_Y
        top = (height - column_height) // 2
        for i, n in enumerate(members):
            pos[n.id] = (PAD + col * (NODE_W + GAP_X), top + i * (NODE_H + GAP_Y))
    edges = []
    for n in nodes:
        x2, y2 = pos[n.id]
        for u in n.upstream:
            if u not in pos:
                continue
            x1, y1 = pos[u]
            sx, sy, ex, ey = x1 + NODE_W, y1 + NODE_H // 2, x2, y2 + NODE_H // 2
            mid = (sx + ex) // 2
            edges.append(f"<path class='edge' data-from='{esc(u)}' data-to='{esc(n.id)}' "
                         f"d='M{sx},{sy} C{mid},{sy} {mid},{ey} {ex},{ey}' marker-end='url(#arrow)'/>")
    boxes = []
    for n in nodes:
        x, y = pos[n.id]
        phase = phases.get(n.id, "SUCCEEDED" if n.id == START_NODE and phases else "NOT_STARTED")
        cls = "skip" if phase == "SKIPPED" else phase_class(phase)
        title = f"{n.id} ({n.kind}): {phase}"
        small = n.id if n.kind in ("start", "end") else f"{n.kind} · {n.id}"
        boxes.append(
            f"<g class='dag-node n-{cls}' data-node='{esc(n.id)}' data-phase='{esc(phase)}' "
            f"transform='translate({x},{y})'><title>{esc(title)}</title>"
            f"<rect width='{NODE_W}' height='{NODE_H}' rx='8'/>"
            f"<text x='10' y='18' font-weight='600'>{esc(_clip(n.label, 22))}</text>"
            f"<text x='10' y='34' fill='#5a6170'>{esc(_clip(small, 26))}</text></g>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}'><defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' "
            "markerWidth='7' markerHeight='7' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#9aa1b0'/>"
            f"</marker></defs>{''.join(edges)}{''.join(boxes)}</svg>")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
