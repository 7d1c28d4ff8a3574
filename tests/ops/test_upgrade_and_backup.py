"""Upgrades and backups of a home, as a team runs them:
- a home made by the release before the newest migration (its code taken from git), holding an execution in
  the middle of a task, is upgraded with `flytelite db upgrade`; the new release finishes the execution
  without running its succeeded task again. A server that does not migrate on start refuses the old schema,
  and any server refuses a schema newer than it knows, each naming both revisions.
- `flytelite backup` of a running server's home restores with `flytelite restore` into a home that runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from flytekit.models.core.execution import WorkflowExecutionPhase
from sqlalchemy import text

from flytelite.store.db import Database, newest_revision
from flytelite.testing import PG_ENV, database_url_for, free_port, make_server, without_flyte_settings
from tests.e2e.flyte_cli import copy_workflows, finished, run_remote, wait_for

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).parents[2]
# The last commit before migration 0006 (matchable attributes): its homes are at schema revision 0005.
BEFORE_0006 = "81afd5d^"
# Seconds an execution may take to end (servers start and stop around them on a loaded machine).
WAIT = 240


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flytelite.cli", *args], capture_output=True, text=True,
                          timeout=300, env=without_flyte_settings(dict(os.environ)))


@pytest.fixture(scope="module")
def old_release(tmp_path_factory) -> Path:
    """The flytelite package of BEFORE_0006, from this clone's history."""
    found = subprocess.run(["git", "cat-file", "-e", f"{BEFORE_0006}^{{commit}}"], cwd=ROOT, capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"this clone's history does not hold {BEFORE_0006} (a shallow clone)")
    folder = tmp_path_factory.mktemp("old-release")
    archive = subprocess.run(["git", "archive", BEFORE_0006, "flytelite"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def test_an_older_releases_home_upgrades_and_its_running_execution_finishes(tmp_path, old_release):
    home, marks, release = tmp_path / "home", tmp_path / "marks", tmp_path / "release"
    old = make_server(tmp_path / "old", home=home)
    # PYTHONSAFEPATH: `python -m` would put the working folder, this checkout, ahead of PYTHONPATH.
    old.env = {**without_flyte_settings(dict(os.environ)), "PYTHONPATH": str(old_release), "PYTHONSAFEPATH": "1"}
    old.start()
    try:
        code = copy_workflows(tmp_path / "wf", "restart.py")
        name = run_remote(old, code, "restart.py", "restart_wf", "--marker_dir", str(marks), "--seconds", "600",
                          "--release", str(release))
        wait_for(lambda: list(marks.glob("slow-*")), "the old release to start the slow task", 180)
    finally:
        old.stop()
    # The commands and servers below open the same database (on PostgreSQL when the tests run there).
    database_url = database_url_for(home)
    config, no_migrate = tmp_path / "server.yaml", tmp_path / "no-migrate.yaml"
    config.write_text(yaml.safe_dump({"database_url": database_url}))
    no_migrate.write_text(yaml.safe_dump({"database_url": database_url, "migrate_on_start": False}))
    on_home = ("--home", str(home), "--config", str(config))
    assert cli("db", "version", *on_home).stdout.startswith("database: 0005;")

    # A server that leaves migrations to `flytelite db upgrade` refuses the old schema.
    refused = cli("start", "--home", str(home), "--config", str(no_migrate), "--port", str(free_port()),
                  "--host", "127.0.0.1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"at schema revision 0005; this flytelite needs {newest_revision()}" in refused.stderr
    assert "flytelite db upgrade" in refused.stderr

    upgraded = cli("db", "upgrade", *on_home)
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.strip() == f"schema at revision {newest_revision()} (was 0005)"

    new = make_server(tmp_path / "new", yaml.safe_dump({"migrate_on_start": False}), home=home)
    new.start()
    try:
        release.write_text("go")
        execution = finished(new, name, WAIT)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED, execution.error
        assert execution.outputs["o0"] == 20
        # The task that had succeeded under the old release did not run again.
        assert len(list(marks.glob("first-*"))) == 1
        again = finished(new, run_remote(new, code, "restart.py", "restart_wf", "--marker_dir", str(marks),
                                         "--seconds", "0"), WAIT)
        assert again.closure.phase == WorkflowExecutionPhase.SUCCEEDED, again.error
    finally:
        new.stop()

    # A schema newer than this release knows is refused by the server and by `db upgrade`, naming both.
    database = Database(database_url or f"sqlite:///{home / 'flytelite.db'}")
    with database.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    database.dispose()
    for result in (cli("start", *on_home, "--port", str(free_port()), "--host", "127.0.0.1"),
                   cli("db", "upgrade", *on_home)):
        assert result.returncode == 1, result.stdout + result.stderr
        assert (f"at schema revision 0999, newer than this flytelite knows (its newest is {newest_revision()})"
                in result.stderr)


def test_a_backup_of_a_running_servers_home_restores_into_a_home_that_runs(tmp_path):
    if os.environ.get(PG_ENV):
        pytest.skip("backs up a SQLite home (a PostgreSQL database is backed up with pg_dump)")
    home, restored_home = tmp_path / "home", tmp_path / "restored"
    server = make_server(tmp_path / "first", home=home)
    server.start()
    try:
        code = copy_workflows(tmp_path / "wf", "hello.py")
        name = run_remote(server, code, "hello.py", "hello_wf", "--name", "backup")
        assert finished(server, name, WAIT).closure.phase == WorkflowExecutionPhase.SUCCEEDED
        archive = tmp_path / "backup.tar.gz"
        backed_up = cli("backup", str(archive), "--home", str(home))  # the server runs on
        assert backed_up.returncode == 0, backed_up.stderr
    finally:
        server.stop()

    restored = cli("restore", str(archive), "--home", str(restored_home))
    assert restored.returncode == 0, restored.stderr
    again = cli("restore", str(archive), "--home", str(restored_home))
    assert again.returncode == 1 and "already holds a flytelite database" in again.stderr

    server = make_server(tmp_path / "second", home=restored_home)
    server.start()
    try:
        execution = finished(server, name, WAIT)
        assert execution.closure.phase == WorkflowExecutionPhase.SUCCEEDED
        assert execution.outputs["o0"] == "hello backup"
        fresh = finished(server, run_remote(server, code, "hello.py", "hello_wf", "--name", "restored"), WAIT)
        assert fresh.outputs["o0"] == "hello restored"
    finally:
        server.stop()


def test_backup_refuses_what_it_cannot_copy(tmp_path):
    config = tmp_path / "pg.yaml"
    config.write_text(yaml.safe_dump({"database_url": "postgresql+psycopg://flyte@db:5432/flyte"}))
    on_postgres = cli("backup", str(tmp_path / "b.tar.gz"), "--config", str(config))
    assert on_postgres.returncode == 1 and "pg_dump" in on_postgres.stderr
    nothing = cli("backup", str(tmp_path / "b.tar.gz"), "--home", str(tmp_path / "empty"))
    assert nothing.returncode == 1 and "no flytelite state" in nothing.stderr
    (tmp_path / "not-a-backup.tar.gz").write_bytes(b"not a tar file")
    bad = cli("restore", str(tmp_path / "not-a-backup.tar.gz"), "--home", str(tmp_path / "into"))
    assert bad.returncode == 1 and "could not restore" in bad.stderr
