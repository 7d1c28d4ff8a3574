"""What an execution's rounds write: the phases that wait for nothing are taken in the pass that enters them."""

from __future__ import annotations

from flyteidl.event import event_pb2

from flytelite.idl.phases import workflow_phase_name
from tests.admin.execution_harness import WF
from tests.propeller import admin_engine as ae
from tests.propeller import flyte_tasks as ft

FUNCTIONS = {"add": lambda i, attempt: {"o0": i["a"] + i["b"]}, "square": lambda i, attempt: {"o0": i["x"] ** 2}}


def test_an_execution_whose_nodes_end_in_one_pass_writes_its_status_once(tmp_path, monkeypatch):
    admin = ae.make_admin(tmp_path)
    admin.register(ft.add_then_square)
    exec_id = admin.create("tests.propeller.flyte_tasks.add_then_square", {"a": 4, "b": 1})
    # Each transaction of events: the workflow phases it reported, and whether it wrote the status too.
    transactions: list[tuple[list[str], bool]] = []
    apply_batch = admin.sink.apply_batch

    def recording(events, then=None):
        phases = [workflow_phase_name(e.phase) for e in events if isinstance(e, event_pb2.WorkflowExecutionEvent)]
        transactions.append((phases, then is not None))
        return apply_batch(events, then=then)

    monkeypatch.setattr(admin.sink, "apply_batch", recording)

    async def body(engine):
        await ae.wait_done(admin, exec_id)

    ae.run_with_engine(admin, body, ae.PythonTasksInProcess(FUNCTIONS))
    try:
        assert ae.outputs_of(admin, exec_id) == {"o0": 25}
        assert admin.get(exec_id).closure.phase == WF.SUCCEEDED
        # Every phase is still reported, in order, in the one transaction that also wrote the status.
        assert transactions == [(["RUNNING", "SUCCEEDING", "SUCCEEDED"], True)]
    finally:
        admin.close()
