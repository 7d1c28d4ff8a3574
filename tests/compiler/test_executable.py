"""The engine's executable view of a compiled workflow against Flyte's FlyteWorkflow custom resources.

Flyte's compiler test data (see ``<repo>/../shared/conformance/flyte-compiler/README.md``) holds, next
to each golden CompiledWorkflowClosure, the FlyteWorkflow CRD FlytePropeller builds from it. The
engine builds its own executable form (flytelite.propeller.workflow.ExecutableWorkflow, loaded from the
closure bytes exactly as the workflow executor loads a FlyteWorkflow row), and its NodeExecutor decides
attempt budgets and deadlines. Here both are reduced to the facts that decide how an execution runs
and compared: node ids and kinds, branch cases, connections, min attempts, deadlines, failure policy.

Representational differences (documented, not compared):
- Flyte flattens the nodes nested in a branch (then/else nodes, recursively) into spec.nodes; the engine
  keeps them inside the branch node's IfElseBlock and lists only top-level nodes in `nodes`/`order`.
  Node ids are compared over the top-level nodes plus the nodes reachable through branches.
- spec.edges.upstream also lists the nested nodes' data dependencies (copied from the compiled
  connections); the engine drops them, since a nested node runs as the branch's child once the branch
  itself is ready. Upstream edges are compared over top-level nodes.
- Flyte's CRD carries a node's timeout only (executionDeadline, per attempt; activeDeadline = twice it,
  across all attempts). The engine times an attempt out after the node's timeout or, when the node has
  none, the task's (flytekit copies the task timeout into the node metadata, so the two agree for
  flytekit workflows). The engine has no whole-node active deadline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from flyteidl.core import compiler_pb2, workflow_pb2
from google.protobuf import json_format

from flytelite.admin.events import EventSink
from flytelite.config import Config
from flytelite.propeller.events import EventRecorder
from flytelite.propeller.execution_context import ExecutionRound
from flytelite.propeller.nodes.executor import NodeExecutor
from flytelite.propeller.nodes.handler import NodeExecutionContext
from flytelite.propeller.nodes.registry import HandlerRegistry
from flytelite.propeller.status import NodeStatus, WorkflowStatus
from flytelite.propeller.workflow import ExecutableWorkflow, node_kind
from flytelite.server.app import build_context
from flytelite.store.flyteworkflow import ExecutionSpec

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "flyte-compiler"
SNACKS = DATA / "snacks-core"
BRANCH = DATA / "branch"

pytestmark = pytest.mark.skipif(
    not (SNACKS / "k8s").is_dir(),
    reason=f"Flyte compiler conformance data not found at {DATA} (expected <repo>/../shared/conformance/flyte-compiler)",
)


def _cases() -> list[tuple[str, Path, Path]]:
    """(case id, CRD file, compiled closure file): snacks `<name>_crd.json` pairs with `compiled/<name>.json`."""
    cases = []
    if (SNACKS / "k8s").is_dir():
        for crd in sorted((SNACKS / "k8s").glob("*_crd.json")):
            name = crd.name.removesuffix("_crd.json")
            cases.append((name, crd, SNACKS / "compiled" / f"{name}.json"))
    if (BRANCH / "k8s").is_dir():
        for crd in sorted((BRANCH / "k8s").glob("*.json")):
            cases.append((f"branch/{crd.stem}", crd, BRANCH / "compiled" / crd.name))
    return cases


CASES = _cases()

# Flyte's CRD node kinds; the engine tells launch-plan nodes from subworkflow nodes, Flyte calls both "workflow".
_FLYTE_KIND = {"subworkflow": "workflow", "launch_plan": "workflow"}
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|h|m|s)")
_GO_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def _go_duration(text: str) -> timedelta:
    """A Go time.Duration as metav1.Duration writes it ("1h2m3.5s", "500ms", "0s")."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    parts = _GO_DURATION.findall(body)
    if "".join(n + u for n, u in parts) != body:
        raise ValueError(f"not a Go duration: {text!r}")
    return timedelta(seconds=sign * sum(float(n) * _GO_UNIT[u] for n, u in parts))


def _positive(delta: timedelta | None) -> timedelta | None:
    # Zero means "no deadline" on both sides (flytekit writes a zero timeout on branch nodes).
    return delta if delta is not None and delta > timedelta(0) else None


@dataclass
class Facts:
    """What decides how an execution runs, in one shape for Flyte's CRD and for the engine."""

    kinds: dict[str, str] = field(default_factory=dict)  # every node id, nested included -> kind
    downstream: dict[str, list[str]] = field(default_factory=dict)  # top-level, non-empty only
    upstream: dict[str, list[str]] = field(default_factory=dict)  # top-level, non-empty only
    # branch node id -> (then node ids of if/elif in order, else node id, else fails)
    branches: dict[str, tuple[tuple[str, ...], str | None, bool]] = field(default_factory=dict)
    min_attempts: dict[str, int] = field(default_factory=dict)
    execution_deadline: dict[str, timedelta | None] = field(default_factory=dict)
    active_deadline: dict[str, timedelta | None] = field(default_factory=dict)
    failure_node: str | None = None
    fail_after_executable_nodes_complete: bool = False


# --- Flyte's side: the FlyteWorkflow custom resource ------------------------------------------------


def crd_facts(crd: dict) -> Facts:
    spec = crd["spec"]
    nodes: dict[str, dict] = spec["nodes"]
    top = _crd_top_level(nodes)
    edges = spec.get("edges") or {}
    facts = Facts()
    for nid, n in nodes.items():
        facts.kinds[nid] = n["kind"]
        # No retry strategy means FlytePropeller's default of one attempt (node-config default-max-attempts).
        facts.min_attempts[nid] = int((n.get("retry") or {}).get("minAttempts", 1))
        own = _positive(_go_duration(n["executionDeadline"])) if n.get("executionDeadline") else None
        # The engine falls back to the task's timeout where the node has none; Flyte's CRD keeps that on the task.
        task_timeout = _crd_task_timeout(crd, n)
        facts.execution_deadline[nid] = own or task_timeout
        facts.active_deadline[nid] = _positive(_go_duration(n["activeDeadline"])) if n.get("activeDeadline") else None
        if n["kind"] == "branch":
            b = n["branch"]
            thens = (b["if"]["then"], *(blk["then"] for blk in b.get("elseIf") or ()))
            facts.branches[nid] = (thens, b.get("else"), "elseFail" in b)
    downstream = edges.get("downstream") or spec.get("connections") or {}
    facts.downstream = {k: sorted(v) for k, v in downstream.items() if v and k in top}
    facts.upstream = {k: sorted(v) for k, v in (edges.get("upstream") or {}).items() if v and k in top}
    if spec.get("onFailure"):
        facts.failure_node = spec["onFailure"]["id"]
    policy = spec.get("onFailurePolicy", 0)
    facts.fail_after_executable_nodes_complete = policy in (
        workflow_pb2.WorkflowMetadata.FAIL_AFTER_EXECUTABLE_NODES_COMPLETE, "FAIL_AFTER_EXECUTABLE_NODES_COMPLETE",
    )
    return facts


def _crd_top_level(nodes: dict[str, dict]) -> set[str]:
    nested = set()
    for n in nodes.values():
        if n["kind"] == "branch":
            b = n["branch"]
            nested.add(b["if"]["then"])
            nested.update(blk["then"] for blk in b.get("elseIf") or ())
            if b.get("else"):
                nested.add(b["else"])
    return set(nodes) - nested


def _crd_task_timeout(crd: dict, node: dict) -> timedelta | None:
    task = (crd.get("tasks") or {}).get(node.get("task") or "")
    timeout = ((task or {}).get("metadata") or {}).get("timeout")
    # Task templates in the CRD are protobuf JSON: a Duration is "<seconds>s".
    return _positive(timedelta(seconds=float(timeout.removesuffix("s")))) if timeout else None


# --- the engine's side: ExecutableWorkflow and the NodeExecutor's rules -----------------------------


class EngineProbe:
    """Asks the engine's own NodeExecutor for a node's attempt budget and per-attempt deadline.

    ExecutableWorkflow does not carry these; NodeExecutor computes them when a node runs, so this
    asks it with a fresh NodeStatus in a real (never advanced) ExecutionRound.
    """

    def __init__(self, tmp: Path):
        self.ctx = build_context(Config(home=tmp))
        self.executor = NodeExecutor(HandlerRegistry(()), self.ctx.config.engine.max_system_retries)

    def round(self, wf: ExecutableWorkflow) -> ExecutionRound:
        spec = ExecutionSpec(project="hello", domain="domain", name="name", inputs_uri="", raw_output_prefix="")
        return ExecutionRound(
            self.ctx, ("hello", "domain", "name"), spec, wf, WorkflowStatus(),
            EventRecorder(EventSink(self.ctx), self.ctx.clock), wake=lambda _delay: None,
        )

    def min_attempts(self, rnd: ExecutionRound, node: workflow_pb2.Node) -> int:
        _eligible, _current, most = self.executor._eligible(NodeExecutionContext(rnd, node, NodeStatus()), None)
        return most

    def execution_deadline(self, rnd: ExecutionRound, node: workflow_pb2.Node) -> timedelta | None:
        return _positive(self.executor._timeout(NodeExecutionContext(rnd, node, NodeStatus())))


def engine_facts(wf: ExecutableWorkflow, probe: EngineProbe) -> Facts:
    rnd = probe.round(wf)
    facts = Facts()
    for node in _with_nested(wf.nodes.values()):
        kind = node_kind(node)
        facts.kinds[node.id] = _FLYTE_KIND.get(kind, kind)
        facts.min_attempts[node.id] = probe.min_attempts(rnd, node)
        facts.execution_deadline[node.id] = probe.execution_deadline(rnd, node)
        facts.active_deadline[node.id] = None  # not represented by the engine
        if kind == "branch":
            ie = node.branch_node.if_else
            thens = (ie.case.then_node.id, *(blk.then_node.id for blk in ie.other))
            default = ie.WhichOneof("default")
            facts.branches[node.id] = (thens, ie.else_node.id if default == "else_node" else None, default == "error")
    facts.downstream = {k: sorted(v) for k, v in wf.downstream.items() if v}
    facts.upstream = {k: sorted(v) for k, v in wf.upstream.items() if v}
    facts.failure_node = wf.failure_node.id if wf.failure_node is not None else None
    facts.fail_after_executable_nodes_complete = wf.fail_after_executable_nodes_complete
    return facts


def _with_nested(nodes) -> list[workflow_pb2.Node]:
    """Nodes plus those nested in branches (recursively), as Flyte flattens them into spec.nodes."""
    out = []
    for node in nodes:
        out.append(node)
        if node.WhichOneof("target") == "branch_node":
            ie = node.branch_node.if_else
            inner = [ie.case.then_node, *(blk.then_node for blk in ie.other)]
            if ie.WhichOneof("default") == "else_node":
                inner.append(ie.else_node)
            out.extend(_with_nested(inner))
    return out


# --- the tests --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> EngineProbe:
    return EngineProbe(tmp_path_factory.mktemp("executable"))


def _load(crd_path: Path, closure_path: Path) -> tuple[dict, bytes]:
    assert closure_path.is_file(), f"no compiled closure {closure_path.name} for CRD {crd_path.name}"
    closure = json_format.Parse(closure_path.read_text(), compiler_pb2.CompiledWorkflowClosure(),
                                ignore_unknown_fields=True)
    return json.loads(crd_path.read_text()), closure.SerializeToString()


def _differences(expected: Facts, actual: Facts) -> list[str]:
    out = []
    for name in Facts.__dataclass_fields__:
        want, got = getattr(expected, name), getattr(actual, name)
        if isinstance(want, dict):
            for key in sorted(set(want) | set(got)):
                if want.get(key, "<absent>") != got.get(key, "<absent>"):
                    out.append(f"{name}[{key}]: Flyte CRD {want.get(key, '<absent>')!r}, engine {got.get(key, '<absent>')!r}")
        elif want != got:
            out.append(f"{name}: Flyte CRD {want!r}, engine {got!r}")
    return out


def test_every_crd_has_a_compiled_closure():
    assert len(CASES) >= 48, f"expected 36 snacks and 12 branch CRDs, found {len(CASES)}"
    missing = [crd.name for _, crd, closure in CASES if not closure.is_file()]
    assert not missing, f"CRDs without a compiled closure: {missing}"


@pytest.mark.parametrize("crd_path,closure_path", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_executable_view_matches_flyte_crd(crd_path: Path, closure_path: Path, probe: EngineProbe):
    crd, closure_pb = _load(crd_path, closure_path)
    wf = ExecutableWorkflow.from_bytes(closure_pb)  # as the workflow executor loads a FlyteWorkflow row
    diffs = _differences(crd_facts(crd), engine_facts(wf, probe))
    assert not diffs, "engine's executable view differs from Flyte's FlyteWorkflow:\n  " + "\n  ".join(diffs)
    # The engine walks nodes in `order`: every top-level node once, each after its upstream nodes.
    assert sorted(wf.order) == sorted(wf.nodes)
    position = {n: i for i, n in enumerate(wf.order)}
    for src, dsts in crd_facts(crd).downstream.items():
        for dst in dsts:
            assert position[src] < position[dst], f"{src} must come before {dst} in the engine's order"


@pytest.mark.parametrize("crd_path,closure_path", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_node_timeout_becomes_the_attempt_deadline(crd_path: Path, closure_path: Path, probe: EngineProbe):
    """No CRD here carries a deadline, so give every task node a timeout as flytekit writes it
    (node metadata) and check the engine's per-attempt deadline is what Flyte's buildNodeSpec makes
    of it: executionDeadline = the node's timeout, with the task's own timeout not consulted."""
    _, closure_pb = _load(crd_path, closure_path)
    closure = compiler_pb2.CompiledWorkflowClosure.FromString(closure_pb)
    expected: dict[str, timedelta] = {}
    for i, node in enumerate(_with_nested(closure.primary.template.nodes)):
        if node.WhichOneof("target") == "task_node":
            node.metadata.timeout.FromTimedelta(timedelta(seconds=60 + i))
            expected[node.id] = timedelta(seconds=60 + i)
    for task in closure.tasks:
        task.template.metadata.timeout.FromTimedelta(timedelta(hours=5))  # the node's timeout wins
    wf = ExecutableWorkflow.from_bytes(closure.SerializeToString())
    got = engine_facts(wf, probe).execution_deadline
    assert {k: v for k, v in got.items() if k in expected} == expected


def test_derived_edges_match_flyte_when_connections_are_missing(probe: EngineProbe):
    diffs = []
    for case, crd_path, closure_path in CASES:
        crd, closure_pb = _load(crd_path, closure_path)
        closure = compiler_pb2.CompiledWorkflowClosure.FromString(closure_pb)
        closure.primary.connections.Clear()
        got = engine_facts(ExecutableWorkflow(closure), probe)
        want = crd_facts(crd)
        if got.upstream != want.upstream or got.downstream != want.downstream:
            diffs.append(f"{case}: Flyte upstream {want.upstream}, engine {got.upstream}")
    assert not diffs, "\n".join(diffs)


def test_go_durations_parse_as_flyte_writes_them():
    assert _go_duration("1h2m3.5s") == timedelta(hours=1, minutes=2, seconds=3.5)
    assert _go_duration("500ms") == timedelta(milliseconds=500)
    assert _go_duration("0s") == timedelta(0)
    with pytest.raises(ValueError):
        _go_duration("10 minutes")
