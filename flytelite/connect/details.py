"""flyteidl2's views of a run's actions (Action, ActionDetails, RunDetails, ActionUpdate), built from their rows
(runs/store.py). The engine's state of an action (propeller/runs.py) holds its attempts' records."""

from __future__ import annotations

import json
from datetime import datetime

from flyteidl2.common import identifier_pb2
from flyteidl2.core import execution_pb2 as core_execution_pb2
from flyteidl2.workflow import run_definition_pb2, state_service_pb2
from google.protobuf import timestamp_pb2

from flytelite.context import ExecutionKey
from flytelite.runs import store
from flytelite.runs.store import ROOT, Phase
from flytelite.store.models import Action

ActionType = run_definition_pb2.ActionType


def run_id(key: ExecutionKey, org: str = "") -> identifier_pb2.RunIdentifier:
    return identifier_pb2.RunIdentifier(org=org, project=key[0], domain=key[1], name=key[2])


def action_id(row: Action, org: str = "") -> identifier_pb2.ActionIdentifier:
    return identifier_pb2.ActionIdentifier(run=run_id(ExecutionKey(row.project, row.domain, row.run_name), org),
                                            name=row.name)


def action(row: Action, org: str = "") -> run_definition_pb2.Action:
    return run_definition_pb2.Action(id=action_id(row, org), metadata=metadata(row), status=status(row))


def metadata(row: Action, spec: run_definition_pb2.ActionSpec | None = None) -> run_definition_pb2.ActionMetadata:
    """The action's metadata (`spec`: its spec, when the caller has read it)."""
    spec = spec or store.spec(row)
    found = run_definition_pb2.ActionMetadata(parent=row.parent, group=spec.group)
    if row.kind == "task":
        template = spec.task.spec.task_template
        found.task.CopyFrom(run_definition_pb2.TaskActionMetadata(
            id=spec.task.id, task_type=template.type, short_name=spec.task.spec.short_name or template.id.name))
        found.action_type = ActionType.ACTION_TYPE_TASK
        found.environment_name = spec.task.spec.environment.name
        found.funtion_name = template.id.name.rsplit(".", 1)[-1]
    elif row.kind == "trace":
        found.trace.name = spec.trace.name
        found.action_type = ActionType.ACTION_TYPE_TRACE
    elif row.kind == "condition":
        found.condition.name = spec.condition.name
        found.action_type = ActionType.ACTION_TYPE_CONDITION
    return found


def status(row: Action) -> run_definition_pb2.ActionStatus:
    found = run_definition_pb2.ActionStatus(phase=row.phase, attempts=row.attempts)  # type: ignore[arg-type]  # an ActionPhase's number
    if '"cache' in row.state_json:  # a cached task's: what the catalog said (propeller/runs.py)
        state = json.loads(row.state_json)
        found.cache_status = state.get("cache_status", state.get("cache", {}).get("status", 0))
    if row.started_at is not None:
        found.start_time.CopyFrom(_timestamp(row.started_at))
    elif row.done:
        found.start_time.CopyFrom(_timestamp(row.created_at))
    if row.ended_at is not None:
        found.end_time.CopyFrom(_timestamp(row.ended_at))
        found.duration_ms = int((row.ended_at - (row.started_at or row.created_at)).total_seconds() * 1000)
    return found


def error_info(row: Action) -> run_definition_pb2.ErrorInfo | None:
    return run_definition_pb2.ErrorInfo.FromString(row.error_pb) if row.error_pb else None


def details(row: Action, org: str = "") -> run_definition_pb2.ActionDetails:
    spec = store.spec(row)
    found = run_definition_pb2.ActionDetails(id=action_id(row, org), metadata=metadata(row, spec),
                                             status=status(row))
    error = error_info(row)
    if row.phase == Phase.ACTION_PHASE_ABORTED:
        found.abort_info.reason = error.message if error is not None else (row.abort_reason or "")
    elif error is not None:
        found.error_info.CopyFrom(error)
    if row.kind == "task":
        found.task.CopyFrom(spec.task.spec)
    elif row.kind == "trace":
        found.trace.CopyFrom(spec.trace.spec)
    elif row.kind == "condition":
        found.condition.CopyFrom(spec.condition)
    found.attempts.extend(attempts(row))
    return found


def attempts(row: Action) -> list[run_definition_pb2.ActionAttempt]:
    """The action's attempts: the ended ones from their records, then the current one."""
    state = json.loads(row.state_json or "{}")
    found = []
    for record in state.get("ended", []):
        attempt = _attempt(record["attempt"], record["phase"], record.get("logs", []))
        attempt.end_time.CopyFrom(_timestamp(datetime.fromisoformat(record["ended_at"])))
        error = record.get("error")
        if error is not None:
            attempt.error_info.CopyFrom(run_definition_pb2.ErrorInfo(
                code=error["code"], message=error["message"], kind=error["kind"]))
        if record["phase"] == Phase.ACTION_PHASE_SUCCEEDED:
            attempt.outputs.output_uri = row.output_uri
        found.append(attempt)
    if not row.done and row.attempts:
        found.append(_attempt(row.attempts, row.phase, state.get("logs", [])))
    if found and row.started_at is not None:
        found[0].start_time.CopyFrom(_timestamp(row.started_at))
    return found


def _attempt(number: int, phase: int, logs: list[dict]) -> run_definition_pb2.ActionAttempt:
    return run_definition_pb2.ActionAttempt(
        attempt=number, phase=phase,  # type: ignore[arg-type]  # an ActionPhase's number
        log_info=[core_execution_pb2.TaskLog(uri=link["uri"], name=link["name"]) for link in logs],
        logs_available=bool(logs))


def update(row: Action, org: str = "") -> state_service_pb2.ActionUpdate:
    """What a parent watching its children is told of one (ActionsService.WatchForUpdates)."""
    found = state_service_pb2.ActionUpdate(action_id=action_id(row, org), phase=row.phase,  # type: ignore[arg-type]  # an ActionPhase's number
                                           output_uri=row.output_uri)
    error = error_info(row)
    if error is not None and row.phase != Phase.ACTION_PHASE_SUCCEEDED:
        found.error.CopyFrom(core_execution_pb2.ExecutionError(code=error.code, message=error.message,
                                                               kind=error.kind))  # type: ignore[arg-type]  # the kinds' numbers agree
    return found


def run(row: Action, org: str = "") -> run_definition_pb2.Run:
    assert row.name == ROOT
    return run_definition_pb2.Run(action=action(row, org))


def run_details(row: Action, org: str = "") -> run_definition_pb2.RunDetails:
    return run_definition_pb2.RunDetails(run_spec=store.spec(row).run_spec, action=details(row, org))


def _timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    found = timestamp_pb2.Timestamp()
    found.FromDatetime(when)
    return found
