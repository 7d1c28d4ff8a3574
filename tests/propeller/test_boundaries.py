"""The engine reaches admin only through the interfaces it owns (flytelite.propeller.clients, events.EventSink).

Every module under flytelite/propeller and flytelite/plugins (the task plugins it runs) is parsed and its
imports checked: nothing from flytelite.admin or Flyte 2's API (flytelite.connect)
(nor the layers above them), none of admin's repositories, and of the store's models only the engine's own
rows (FlyteWorkflow, and Action of Flyte 2 runs). This is what lets an engine replica run apart from the API.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import flytelite.plugins
import flytelite.propeller

PROPELLER = Path(flytelite.propeller.__file__).parent
PLUGINS = Path(flytelite.plugins.__file__).parent
ROOT = PROPELLER.parent
# Packages the engine must never import: admin, and what sits above it (the composition root, the UI, schedules).
FORBIDDEN = ("flytelite.admin", "flytelite.connect", "flytelite.server", "flytelite.cli", "flytelite.console", "flytelite.scheduler",
             # admin's repositories over its tables (executions, node/task executions, entities)
             "flytelite.store.executions", "flytelite.store.entities")
# The store's models the engine may read: its own state (FlytePropeller's FlyteWorkflow custom resource, and a
# Flyte 2 run's actions, Flyte 2's TaskAction resources).
ENGINE_MODELS = {"FlyteWorkflow", "Action"}


def _modules() -> list[Path]:
    return sorted([*PROPELLER.rglob("*.py"), *PLUGINS.rglob("*.py")])


def _package(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] != "__init__" else parts[:-1])


def _imports(source: str, package: str) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names imported from it) for every import in a module of `package`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            found.append((node.lineno, module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.append((node.lineno, str(node.args[0].value), []))
    return found


def _violations(source: str, package: str, where: str) -> list[str]:
    out = []
    for line, module, names in _imports(source, package):
        where_line = f"{where}:{line}"
        for name in [module] + [f"{module}.{n}" for n in names]:
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                out.append(f"{where_line} imports {name}")
                break
        if module == "flytelite.store.models":
            out += [f"{where_line} imports admin's model {n} (the engine may use only {sorted(ENGINE_MODELS)})"
                    for n in names if n not in ENGINE_MODELS]
        if module == "flytelite.store" and "models" in names:
            out.append(f"{where_line} imports flytelite.store.models whole (import FlyteWorkflow from it instead)")
    return out


def test_the_walk_sees_every_engine_module():
    names = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {"propeller/engine.py", "propeller/nodes/launch_plan/handler.py", "propeller/nodes/gate/handler.py",
            "propeller/nodes/recovery.py", "propeller/clients/__init__.py", "plugins/registry.py",
            "plugins/agents/plugin.py"} <= names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_engine_module_does_not_reach_into_admin(path: Path):
    where = path.relative_to(ROOT.parent).as_posix()
    assert _violations(path.read_text(), _package(path), where) == [], (
        "the engine talks to admin only through flytelite.propeller.clients and events.EventSink; "
        "add what it needs to those interfaces and implement it in flytelite/admin/engine_clients.py")


def test_the_check_catches_an_admin_import():
    source = ("from flytelite.admin.signals import get_or_create_signal\n"
              "from ..clients import AdminClients\n"
              "from flytelite.store.models import FlyteWorkflow, Execution\n"
              "from flytelite import admin\n"
              "def later():\n"
              "    import flytelite.store.executions as repo\n"
              "    importlib.import_module('flytelite.admin.launch')\n")
    found = [v.split(" ", 1)[1] for v in _violations(source, "flytelite.propeller.nodes", "probe.py")]
    assert found == [
        "imports flytelite.admin.signals",
        "imports admin's model Execution (the engine may use only ['Action', 'FlyteWorkflow'])",
        "imports flytelite.admin",
        "imports flytelite.store.executions",
        "imports flytelite.admin.launch",
    ]


def test_importing_the_engine_loads_no_admin_module():
    """Transitively too: a fresh interpreter that imports every engine module has loaded nothing of admin's."""
    packages = tuple(f + "." for f in FORBIDDEN) + FORBIDDEN
    script = "\n".join([
        "import importlib, pkgutil, sys",
        "import flytelite.plugins, flytelite.propeller",
        "for p in (flytelite.plugins, flytelite.propeller):",
        "    for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.'):",
        "        if '.task_site' not in m.name:",  # the task processes' sitecustomize, not engine code
        "            importlib.import_module(m.name)",
        f"print(' '.join(sorted(k for k in sys.modules if k.startswith({packages!r}))))",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
