"""The workflow graph: edges between nodes, cycle and reachability checks, topological order.

Edges come from promise bindings (data dependencies) and explicit ``upstream_node_ids`` (execution
dependencies). Like Flyte, the upstream and downstream maps are kept separately because nodes inside a
branch (and the failure node) only record where their inputs come from (upstream edges), never
become downstream targets themselves. Lists are emitted sorted so compiled output is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flyteidl.core import compiler_pb2

from flytelite.compiler import errors as E
from flytelite.idl.ids import END_NODE, START_NODE


class Graph:
    def __init__(self) -> None:
        self.upstream: dict[str, set[str]] = {}
        self.downstream: dict[str, set[str]] = {}

    def add_upstream_edge(self, provider: str, dependent: str) -> None:
        # An empty node id in a promise means "the workflow inputs".
        self.upstream.setdefault(dependent, set()).add(provider or START_NODE)

    def add_downstream_edge(self, provider: str, dependent: str) -> None:
        self.downstream.setdefault(provider or START_NODE, set()).add(dependent)

    def add_execution_edge(self, provider: str, dependent: str) -> None:
        self.add_downstream_edge(provider, dependent)
        self.add_upstream_edge(provider, dependent)

    def to_connections(self, out: compiler_pb2.ConnectionSet) -> None:
        out.SetInParent()
        for key, ids in self.downstream.items():
            out.downstream[key].ids.extend(sorted(ids))
        for key, ids in self.upstream.items():
            out.upstream[key].ids.extend(sorted(ids))


def detect_cycle(start: str, neighbors: Callable[[str], Iterable[str]]) -> tuple[list[str], set[str], bool]:
    """Depth-first search from ``start``: (first cycle found as a path, visited nodes, cycle found?)."""
    visited: set[str] = set()
    visiting: set[str] = set()
    # Iterative DFS so deep workflows cannot hit Python's recursion limit.
    stack: list[tuple[str, list[str]]] = []

    def push(node: str) -> None:
        visiting.add(node)
        visited.add(node)
        stack.append((node, sorted(neighbors(node), reverse=True)))

    push(start)
    while stack:
        node, pending = stack[-1]
        if not pending:
            visiting.discard(node)
            stack.pop()
            continue
        nxt = pending.pop()
        if nxt in visiting:
            path = [n for n, _ in stack]
            return path[path.index(nxt) :] + [nxt], set(visiting), True
        if nxt not in visited:
            push(nxt)
    return [], visited, False


def validate_reachable(graph: Graph, node_ids: Iterable[str], errs: E.Errors) -> bool:
    """Every node must be reachable from the start node and the graph must be acyclic."""
    all_ids = set(node_ids)
    cycle, visited, found = detect_cycle(START_NODE, lambda n: graph.downstream.get(n, ()))
    if found:
        errs.add(
            E.CYCLE_DETECTED,
            START_NODE,
            f"The workflow has a cycle: {' > '.join(cycle)}. Remove one of these dependencies.",
        )
    else:
        unreachable = sorted(all_ids - visited - {END_NODE})
        if unreachable:
            errs.add(
                E.UNREACHABLE_NODES,
                START_NODE,
                f"The workflow has nodes that can never run: [{','.join(unreachable)}]. "
                "Make sure they depend (directly or not) on the workflow start.",
            )
    return errs.ok
