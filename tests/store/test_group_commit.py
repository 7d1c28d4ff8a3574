"""Group commit and SQLite's writer lock: concurrent writes share transactions, each caller answered only once
its own write committed, a failing write fails alone. Run with --db=postgresql as well as the default."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from flytelite.config import Config
from flytelite.server.app import build_context
from flytelite.store.models import Leader
from flytelite.testing import database_url_for
from tests.e2e.flyte_cli import wait_for

WRITERS = 64


@pytest.fixture
def db(tmp_path):
    ctx = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    yield ctx.db
    ctx.db.dispose()


def add(name: str):
    return [(Leader.__table__, {"name": name, "owner": None, "acquired_at": None, "expires_at": None})]


def committed(db, name: str) -> bool:
    with db.session() as s:
        return s.get(Leader, name) is not None


def test_concurrent_writes_share_transactions_and_return_once_committed(db):
    seen_on_return = []

    def write(i: int) -> None:
        db.group_commit.insert(add(f"w{i}"))
        # Read from another session: the write must already be committed when write() returns.
        seen_on_return.append(committed(db, f"w{i}"))

    with ThreadPoolExecutor(WRITERS) as pool:
        # Every writer queues while a batch is being committed (the leader's lock held here), however slowly
        # a loaded machine starts the threads: then they must all go in the next transaction.
        with db.group_commit._leading:
            writes = [pool.submit(write, i) for i in range(WRITERS)]
            wait_for(lambda: db.group_commit.waiting == WRITERS, "every writer to queue")
        for done in writes:
            done.result()
    assert seen_on_return == [True] * WRITERS
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Leader)) == WRITERS
    assert db.group_commit.batches == 1


def test_a_failing_write_fails_alone(db):
    db.group_commit.insert(add("taken"))
    start = threading.Barrier(8)
    errors: dict[str, BaseException | None] = {}

    def write(name: str) -> None:
        start.wait()
        try:
            db.group_commit.insert(add(name))
            errors[name] = None
        except Exception as exc:  # noqa: BLE001
            errors[name] = exc

    names = ["taken"] + [f"free{i}" for i in range(7)]
    threads = [threading.Thread(target=write, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(errors["taken"], IntegrityError)
    assert all(errors[n] is None and committed(db, n) for n in names[1:])


def test_a_write_inside_an_open_session_commits_alone(db):
    with db.session() as s:
        s.get(Leader, "nothing")
        db.group_commit.insert(add("inner"))
    assert committed(db, "inner")


def test_sqlite_writer_lock_is_given_back_after_a_rollback(db):
    if not db.is_sqlite:
        pytest.skip("the writer lock orders SQLite's writers only")
    with pytest.raises(RuntimeError), db.session() as s:
        s.add(Leader(name="rolled-back"))
        s.flush()
        raise RuntimeError("the session fails after its first write")
    started = time.monotonic()
    with db.session() as s:
        s.add(Leader(name="next"))
    assert time.monotonic() - started < 5
    assert committed(db, "next") and not committed(db, "rolled-back")


def test_many_threads_writing_at_once_all_commit(db):
    def write(i: int) -> None:
        for j in range(5):
            with db.session() as s:
                s.add(Leader(name=f"t{i}-{j}"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(write, range(16)))
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Leader)) == 80
