"""`flytelite cache list|clear` as a user runs it: a subprocess on a real home, with and without the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flyteidl.core import identifier_pb2

from flytelite.catalog import Catalog, catalog_key, source_task_execution
from flytelite.config import Config
from flytelite.server.app import build_context
from flytelite.testing import config_args_for, database_url_for
from tests.catalog import helpers
from tests.catalog.helpers import inputs, int_outputs, open_catalog, template


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flytelite.cli", "cache", *args],
                          capture_output=True, text=True, timeout=120)


def _fill(catalog: Catalog) -> tuple[str, str]:
    """Two entries of square (one with a source execution) and one of square_v2."""
    square, v2 = template(), template(helpers.square_v2)
    exec_id = identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development", name="abc123")
    catalog.put(catalog_key(square, inputs(x=1)), int_outputs(1), source_task_execution(square.id, exec_id, "n0", 0))
    catalog.put(catalog_key(square, inputs(x=2)), int_outputs(4))
    catalog.put(catalog_key(v2, inputs(x=1)), int_outputs(1))
    return square.id.name, v2.id.name


def _home(tmp_path: Path) -> Path:
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    ctx.db.dispose()
    return tmp_path / "home"


def test_list_then_clear_one_task_then_all(tmp_path):
    home = _home(tmp_path)
    catalog = open_catalog(home)
    square, v2 = _fill(catalog)
    catalog.db.dispose()

    listed = _cli("list", "--home", str(home), *config_args_for(home))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["PROJECT", "DOMAIN", "TASK", "CACHE", "VERSION", "TAG", "CREATED", "SOURCE",
                                "EXECUTION"]
    rows = [line.split() for line in lines[1:-1]]
    assert sorted(r[2] for r in rows) == sorted([square, square, v2])
    assert [r[3] for r in rows if r[2] == v2] == ["2.0"]
    assert [r[-1] for r in rows if r[2] == square and r[-1] != "-"] == ["abc123/n0"]
    assert all(r[:2] == ["flytesnacks", "development"] and r[4].startswith("flyte_cached-") for r in rows)
    assert lines[-1] == "3 cached entries"

    only = _cli("list", "--home", str(home), "--task", v2, *config_args_for(home))
    assert only.stdout.splitlines()[-1] == "1 cached entry"

    cleared = _cli("clear", "--home", str(home), "--task", square, *config_args_for(home))
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.strip() == f"cleared 2 cached entries of task {square}"
    catalog = open_catalog(home)
    assert [e.key.task_name for e in catalog.list()] == [v2]
    catalog.db.dispose()

    assert _cli("clear", "--home", str(home), *config_args_for(home)).stdout.strip() == "cleared 1 cached entry"
    assert _cli("list", "--home", str(home), *config_args_for(home)).stdout.splitlines()[-1] == "0 cached entries"


def test_a_home_without_state_is_an_error_that_says_so(tmp_path):
    # No --config: a database URL would hold the state; without one the home's SQLite file must exist.
    result = _cli("list", "--home", str(tmp_path / "nowhere"))
    assert result.returncode != 0
    assert "no flytelite state" in result.stderr and "--home" in result.stderr


def test_list_and_clear_while_the_server_runs(fresh_server):
    catalog = open_catalog(fresh_server.home)
    square, _ = _fill(catalog)
    listed = _cli("list", "--home", str(fresh_server.home), "--task", square,
                  *config_args_for(fresh_server.home))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == "2 cached entries"
    cleared = _cli("clear", "--home", str(fresh_server.home), *config_args_for(fresh_server.home))
    assert cleared.stdout.strip() == "cleared 3 cached entries"
    assert catalog.list() == []
    catalog.db.dispose()
