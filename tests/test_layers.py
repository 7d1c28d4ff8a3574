"""Imports point one way: every module of flytelite imports only from its own layer and the layers below it,
as CONTRIBUTING.md's map of the code lists them (top to bottom there is bottom to top here). Inside the engine
(`propeller`, and its `nodes`) the same rule holds between the layers of PROPELLER_LAYERS."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import flytelite
from tests.propeller.test_boundaries import _imports

ROOT = Path(flytelite.__file__).parent
# From the bottom up; a top-level module counts as the package of its name.
LAYERS = [
    ("idl", "errors", "config"),
    ("store", "storage", "kubeclient"),
    ("context", "metrics", "tracing", "logs", "runs"),
    ("compiler", "catalog", "notifications"),
    ("plugins",),
    ("propeller",),
    ("admin", "connect"),
    ("scheduler", "retention"),
    ("console", "auth"),
    ("server", "cli"),
    ("testing", "testing_pg", "testing_k8s", "pytest_plugin"),
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}
# Inside a package, from the bottom up: its modules and subpackages (a subpackage counts as one).
PROPELLER_LAYERS = {
    "flytelite.propeller": [
        # what an execution is: its compiled workflow, its status and phases; the seams the engine owns; the
        # caches it keeps them in
        ("phases", "status", "workflow", "events", "clients", "sized"),
        # one round over one execution, and a level of its node tree
        ("scope", "execution_context"),
        # the node executor and the node handlers; a Flyte 2 run's actions (no nodes: a flat set of tasks)
        ("nodes", "runs"),
        # one execution's round, fenced by its lease
        ("workflow_executor", "leases"),
        # the controller: the work queue, the workers behind the round gate, the FlyteWorkflow mirror
        ("engine", "queue", "round_gate", "crd"),
    ],
    "flytelite.propeller.nodes": [
        # the handler interface (FlytePropeller's nodes/handler and interfaces)
        ("handler",),
        # what handlers and the executor share: bindings, offloading, recovery, the failure node
        ("resolve", "offloading", "recovery", "failure_node"),
        # one package per node kind
        ("array", "branch", "dynamic", "end", "gate", "launch_plan", "start", "subworkflow", "task"),
        ("registry",),
        # the NodeExecutor, which runs every kind through the registry
        ("executor",),
    ],
}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Lines of imports under `if TYPE_CHECKING:` (annotations only, never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {n.lineno for body in node.body for n in ast.walk(body) if hasattr(n, "lineno")}
    return lines


def _children(package: str) -> set[str]:
    """The modules and subpackages of `package` (a directory under flytelite)."""
    folder = ROOT.parent.joinpath(*package.split("."))
    return {p.stem if p.suffix == ".py" else p.name for p in folder.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}


def _is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _runtime_imports():
    """(module's path, its dotted name split, line, imported module split) for every import of flytelite that
    runs. `from flytelite.x import y` imports flytelite.x.y when that is a module, else flytelite.x; a package's
    `__init__.py` is named as the package."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        package = ".".join(parts[:-1])
        source = path.read_text()
        annotations_only = _type_checking_only(ast.parse(source))
        for line, module, names in _imports(source, package):
            if line in annotations_only or module.split(".")[0] != "flytelite":
                continue
            for target in [f"{module}.{n}" for n in names] or [module]:
                imported = target if _is_module(target) else module
                yield path, list(parts[:-1] if parts[-1] == "__init__" else parts), line, imported.split(".")


def test_every_package_is_in_a_layer():
    assert _children("flytelite") == set(LAYER), "add the new package to LAYERS and to the map in CONTRIBUTING.md"


def test_imports_point_down_the_layers():
    upward = [f"{path.relative_to(ROOT.parent)}:{line} imports {'.'.join(imported)}"
              for path, module, line, imported in _runtime_imports()
              if len(module) > 1 and len(imported) > 1 and LAYER[imported[1]] > LAYER[module[1]]]
    assert upward == []


@pytest.mark.parametrize("package", sorted(PROPELLER_LAYERS))
def test_every_engine_module_is_in_a_layer(package):
    named = {name for names in PROPELLER_LAYERS[package] for name in names}
    assert _children(package) == named, f"add the new module to PROPELLER_LAYERS[{package!r}]"


@pytest.mark.parametrize("package", sorted(PROPELLER_LAYERS))
def test_engine_imports_point_down_its_layers(package):
    """A module of `package` imports its siblings only from its own layer and the layers below it."""
    layer = {name: i for i, names in enumerate(PROPELLER_LAYERS[package]) for name in names}
    inside = package.split(".")
    depth = len(inside)
    upward = [f"{path.relative_to(ROOT.parent)}:{line} imports {'.'.join(imported)}"
              for path, module, line, imported in _runtime_imports()
              if module[:depth] == imported[:depth] == inside and len(module) > depth and len(imported) > depth
              and layer[imported[depth]] > layer[module[depth]]]
    assert upward == []
