"""The console's typed form posts: a signal's value converted by the signal's type, and launch errors."""

from __future__ import annotations

from datetime import datetime, timezone

import requests
from flyteidl.core import literals_pb2 as L
from flyteidl.core import types_pb2 as T

from flytelite.store.models import Signal

NOW = datetime(2026, 1, 2, tzinfo=timezone.utc)


def add_signal(ctx, execution: str, signal_id: str, lt: T.LiteralType) -> None:
    with ctx.db.session() as s:
        s.add(Signal(project="flytesnacks", domain="development", execution_name=execution, signal_id=signal_id,
                     type_pb=lt.SerializeToString(), value_pb=None, created_at=NOW, updated_at=NOW))


def post_signal(console, value: str, signal_id: str = "count"):
    return requests.post(f"{console.url}/console/api/signals", json={
        "project": "flytesnacks", "domain": "development", "execution": "ex1", "signal_id": signal_id,
        "value": value})


def test_signal_value_is_converted_by_the_signals_type(console):
    ctx = console.ctx
    add_signal(ctx, "ex1", "count", T.LiteralType(simple=T.SimpleType.INTEGER))
    wrong = post_signal(console, "lots")
    assert wrong.status_code == 400 and "count: 'lots' does not fit type INTEGER" in wrong.json()["error"]
    assert post_signal(console, "12").json() == {"ok": True}
    with ctx.db.session() as s:
        row = s.get(Signal, ("flytesnacks", "development", "ex1", "count"))
        assert L.Literal.FromString(row.value_pb).scalar.primitive.integer == 12
    missing = post_signal(console, "1", signal_id="other")
    assert missing.status_code == 404 and "has no signal 'other' (yet)" in missing.json()["error"]


def test_launch_errors_come_back_as_json(console):
    resp = requests.post(f"{console.url}/console/api/launch", json={
        "kind": "launch_plan", "project": "flytesnacks", "domain": "development", "name": "nope", "version": "v1"})
    assert resp.status_code == 404 and "nope" in resp.json()["error"]
    assert requests.post(f"{console.url}/console/api/launch", data=b"[1]").status_code == 400
    assert requests.post(f"{console.url}/console/api/launch", json={"kind": "workflow"}).json()["error"].startswith(
        "cannot launch a 'workflow'")


def test_forms_that_are_not_what_an_action_reads_are_400(console):
    for action in ("launch", "signals"):
        for body in (b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000):
            resp = requests.post(f"{console.url}/console/api/{action}", data=body)
            assert resp.status_code == 400, (action, resp.text[:200])
            assert "the form is not JSON in UTF-8" in resp.json()["error"]
    for form, message in [({"kind": {"a": 1}}, "cannot launch a {'a': 1}"),
                          ({"kind": ["task"]}, "cannot launch a ['task']"),
                          ({"name": "x", "inputs": ["a"]}, "inputs must map input names to their text")]:
        resp = requests.post(f"{console.url}/console/api/launch", json={"project": "flytesnacks",
                                                                         "domain": "development", **form})
        assert resp.status_code == 400, resp.text[:300]
        assert message in resp.json()["error"]
