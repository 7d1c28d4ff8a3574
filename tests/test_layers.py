"""Imports point one way: every module of flytelite imports only from its own layer and the layers below it,
as CONTRIBUTING.md's map of the code lists them (top to bottom there is bottom to top here)."""

from __future__ import annotations

import ast
from pathlib import Path

import flytelite
from tests.propeller.test_boundaries import _imports

ROOT = Path(flytelite.__file__).parent
# From the bottom up; a top-level module counts as the package of its name.
LAYERS = [
    ("idl", "errors", "config"),
    ("store", "storage", "kubeclient"),
    ("context", "metrics", "tracing", "logs"),
    ("compiler", "catalog", "notifications"),
    ("plugins",),
    ("propeller",),
    ("admin",),
    ("scheduler", "retention"),
    ("console", "auth"),
    ("server", "cli"),
    ("testing", "testing_pg", "testing_k8s", "pytest_plugin"),
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Lines of imports under `if TYPE_CHECKING:` (annotations only, never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {n.lineno for body in node.body for n in ast.walk(body) if hasattr(n, "lineno")}
    return lines


def test_every_package_is_in_a_layer():
    tops = {p.stem if p.suffix == ".py" else p.name for p in ROOT.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert tops == set(LAYER), "add the new package to LAYERS and to the map in CONTRIBUTING.md"


def test_imports_point_down_the_layers():
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        package = ".".join(parts[:-1])
        source = path.read_text()
        annotations_only = _type_checking_only(ast.parse(source))
        for line, module, names in _imports(source, package):
            # `from flytelite import errors` imports flytelite.errors.
            for target in [f"{module}.{n}" for n in names] if module == "flytelite" else [module]:
                top = target.split(".")
                if top[0] == "flytelite" and len(top) > 1 and line not in annotations_only \
                        and LAYER[top[1]] > LAYER[parts[1]]:
                    upward.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert upward == []
