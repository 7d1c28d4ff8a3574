"""What must read the same on SQLite and PostgreSQL: run with --db=postgresql as well as the default.

Each test states a behaviour a user sees through the API; the database underneath must not change it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta

import pytest
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from flyteidl.admin import common_pb2, execution_pb2
from flyteidl.core import execution_pb2 as core
from flyteidl.core import identifier_pb2 as idpb
from sqlalchemy import select

from flytelite import errors
from flytelite.context import ExecutionKey
from flytelite.propeller.workflow_executor import _READ_ROUND, _key_params
from flytelite.store import executions as repo
from flytelite.store.db import MIGRATIONS_DIR, Database, newest_revision
from flytelite.store.models import Execution, FlyteWorkflow
from flytelite.store.statements import DriverQuery
from flytelite.testing_pg import PG_ENV, create_database
from tests.admin.execution_harness import T0, WF, D, Harness, P


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.register_all()
    yield harness
    harness.close()


def names(h: Harness, filters: str) -> list[str]:
    request = common_pb2.ResourceListRequest(id=common_pb2.NamedEntityIdentifier(project=P, domain=D),
                                             filters=filters, limit=100)
    return [e.id.name for e in h.svc.ListExecutions(request).executions]


def test_the_selected_database_is_the_one_in_use_and_at_the_newest_migration(h, request):
    assert h.ctx.db.engine.dialect.name == request.config.getoption("--db")
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with h.ctx.db.engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == ScriptDirectory.from_config(cfg).get_current_head()


def test_replicas_starting_together_migrate_an_empty_database_once(request, tmp_path):
    """Replicas of a Deployment start at the same moment and each migrates on start: one upgrades, the others
    wait and find the schema current (none fails on a table another is creating)."""
    if request.config.getoption("--db") == "postgresql":
        url = create_database(os.environ[PG_ENV], f"migrate_{uuid.uuid4().hex[:8]}")
    else:
        url = f"sqlite:///{tmp_path / 'flytelite.db'}"
    config = tmp_path / "flytelite.yaml"
    config.write_text(f"database_url: {url}\n")
    replicas = [subprocess.Popen([sys.executable, "-m", "flytelite.cli", "db", "upgrade", "--config", str(config)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=180)[0] for p in replicas]
    assert [p.returncode for p in replicas] == [0] * 4, outputs
    db = Database(url)
    try:
        assert db.schema_revision() == newest_revision()
    finally:
        db.dispose()


def test_times_are_utc_whatever_zone_a_filter_is_written_in(h):
    h.clock.current = T0
    h.create("pipeline_fixed", name="first")
    h.clock.current = T0 + timedelta(minutes=1)
    h.create("pipeline_fixed", name="second")
    second = idpb.WorkflowExecutionIdentifier(project=P, domain=D, name="second")
    assert h.get(second).closure.created_at.ToDatetime() == (T0 + timedelta(minutes=1)).replace(tzinfo=None)
    # 14:00:30 at +02:00 is 12:00:30 UTC; a time without a zone is UTC.
    assert names(h, "gte(created_at,2024-05-01T14:00:30+02:00)") == ["second"]
    assert names(h, "gte(created_at,2024-05-01T12:00:30)") == ["second"]
    assert names(h, "lt(created_at,2024-05-01T12:00:30Z)") == ["first"]
    with h.ctx.db.session() as session:
        stored = session.scalar(select(Execution.created_at).where(Execution.name == "first"))
    assert stored.replace(tzinfo=None) == T0.replace(tzinfo=None)  # naive on SQLite, UTC-aware on PostgreSQL
    assert stored.utcoffset() in (None, timedelta(0))


def test_contains_matches_case_as_flyteadmin_on_postgresql_does(h):
    h.create("pipeline_fixed", name="nightly-report")
    assert names(h, "contains(name,report)") == ["nightly-report"]
    assert names(h, "contains(name,REPORT)") == []


def test_duplicates_are_already_exists_and_overlong_text_is_invalid_on_both(h):
    h.create("pipeline_fixed", name="once")
    with pytest.raises(errors.AlreadyExists):
        h.create("pipeline_fixed", name="once")
    # PostgreSQL refuses a label longer than its column, SQLite would store it: both refuse it up front.
    with pytest.raises(errors.InvalidArgument, match="at most 255"):
        h.create("pipeline_fixed", name="long-label", labels=common_pb2.Labels(values={"team": "x" * 256}))
    with pytest.raises(errors.InvalidArgument, match="at most 255"):
        h.create("pipeline_fixed", name="long-tag", tags=["t" * 256])
    assert names(h, "contains(name,long)") == []


def test_a_terminate_while_another_writer_holds_the_execution_keeps_both_changes(h):
    """Writers of one execution's closure read it locked: the second reads what the first committed."""
    ex = h.create("pipeline_fixed", name="racing")
    h.workflow_event(ex, WF.RUNNING, 1)
    outcome: list[BaseException | None] = []

    def terminate():
        try:
            h.svc.TerminateExecution(execution_pb2.ExecutionTerminateRequest(id=ex, cause="stop it"))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    with h.ctx.db.session() as session:
        row = repo.get_execution(session, ex, for_update=True)
        closure = execution_pb2.ExecutionClosure.FromString(row.closure_pb)
        closure.state_change_details.state = execution_pb2.EXECUTION_ARCHIVED
        row.closure_pb = closure.SerializeToString()
        session.flush()
        other = threading.Thread(target=terminate)
        other.start()
        time.sleep(0.5)  # the terminate reads now, before this transaction commits
    other.join(30)
    closure = h.get(ex).closure
    assert closure.state_change_details.state == execution_pb2.EXECUTION_ARCHIVED
    assert outcome == [None]  # it waited for the lock, then read the archived closure
    assert closure.abort_metadata.cause == "stop it"
    assert closure.phase == core.WorkflowExecution.ABORTING


def test_the_engines_round_read_on_the_drivers_connection_reads_what_sqlalchemy_reads(h):
    h.create("pipeline_fixed", name="read")
    query = DriverQuery(_READ_ROUND, h.ctx.db.engine.dialect)
    with h.ctx.db.reading() as connection:
        status = connection.execute(select(FlyteWorkflow.status_json)).scalar_one()
        cases = [(held, kept) for held in (False, True) for kept in (None, status, status + " ")]
        for key in (ExecutionKey(P, D, "read"), ExecutionKey(P, D, "missing")):
            for held, kept in cases:
                params = {**_key_params(key), "held": held, "kept_status": kept}
                expected = connection.execute(_READ_ROUND, params).one_or_none()
                got = query.one_or_none(connection, params)
                if expected is None:
                    assert got is None
                    continue
                assert got is not None and got._asdict().keys() == expected._asdict().keys()
                assert tuple(got) == tuple(expected)
                # What the round relies on: the workflow and spec only when not held, the status only when changed.
                assert (got.closure_pb is None) == held and (got.status_json is None) == (kept == status)
                assert not got.done and got.abort_cause is None


def test_upgrading_fills_in_who_launched_each_existing_execution(request, tmp_path):
    """Migration 0011 adds executions.launched_by (FlyteAdmin's `user` filter) and reads it from the spec of every
    execution already stored, a batch at a time."""
    from alembic import command
    from sqlalchemy import column, insert, table

    from flytelite.store.db import _alembic_config

    if request.config.getoption("--db") == "postgresql":
        url = create_database(os.environ[PG_ENV], f"launched_{uuid.uuid4().hex[:8]}")
    else:
        url = f"sqlite:///{tmp_path / 'flytelite.db'}"
    db = Database(url)
    try:
        command.upgrade(_alembic_config(db.engine), "0010")
        rows = [dict(project=P, domain=D, name=f"e{i:04d}", launch_plan_name="lp", launch_plan_version="v",
                     workflow_name="wf", workflow_version="v", task_name="", phase=0, mode=0, state=0,
                     spec_pb=execution_pb2.ExecutionSpec(metadata=execution_pb2.ExecutionMetadata(
                         principal=f"user{i % 3}" if i % 4 else "")).SerializeToString(),
                     closure_pb=b"", inputs_uri="", user_inputs_uri="", error_kind="",
                     parent_node_execution_id=None, created_at=T0, updated_at=T0, started_at=None, duration=0.0)
                for i in range(2500)]  # more than one batch
        old = table("executions", *(column(name) for name in rows[0]))  # the columns of revision 0010 only
        with db.engine.begin() as conn:
            conn.execute(insert(old), rows)
        command.upgrade(_alembic_config(db.engine), "head")
        with db.session() as session:
            found = {r.name: r.launched_by for r in session.scalars(select(Execution))}
        assert found == {f"e{i:04d}": f"user{i % 3}" if i % 4 else "" for i in range(2500)}
    finally:
        db.dispose()
