"""Retention: remove finished executions past their age, with everything that belongs to them only.

What goes, for an execution that ended before the cutoff (`flytelite gc --older-than`, or the server's
`gc.older_than` every `gc.interval_seconds` on the replica that leads the "gc" leadership):
its rows (execution, tags, node and task executions, the engine's FlyteWorkflow, signals, its notification
e-mails), its data dir
(inputs, outputs, offloaded literals, decks, errors), the raw outputs of its task attempts
(`<raw prefix>/<shard>/<execution>-<node>-<attempt>`, FlytePropeller's per-attempt prefix), its task logs and
work folders; cache entries created before the cutoff, with their copied outputs; and the audit trail's
events before `gc.audit_older_than` (the same cutoff when unset).

What stays, always: an execution the engine has not finished (its FlyteWorkflow is not done), whatever its
age; a child execution whose parent stays; a cache entry a kept execution hit (its outputs may point into
the data of the execution that computed it, e.g. offloaded literals), and that computing execution too.
Flyte itself leaves this to FlyteAdmin's data retention jobs and the bucket's lifecycle rules; flytelite
owns its store, so it cleans up itself. This module never runs on its own; the CLI and the server call it.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flyteidl.admin import execution_pb2, node_execution_pb2, task_execution_pb2
from flyteidl.core import catalog_pb2, identifier_pb2
from sqlalchemy import delete, or_, select

from flytelite.config import parse_duration
from flytelite.context import Context, ExecutionKey
from flytelite.idl.phases import WORKFLOW_TERMINAL
from flytelite.plugins.machinery.core import attempt_raw_prefix
from flytelite.store.db import as_utc
from flytelite.store.models import (
    AuditEvent,
    CatalogArtifact,
    Execution,
    ExecutionTag,
    FlyteWorkflow,
    NodeExecution,
    NotificationOutbox,
    Signal,
    TaskExecution,
)
from flytelite.store.statements import changed_rows

log = logging.getLogger(__name__)

# Executions removed per transaction: a large backlog never holds the database for long.
BATCH = 200


@dataclass
class GcReport:
    executions: list[str] = field(default_factory=list)
    cache_entries: int = 0
    audit_events: int = 0
    # Old finished executions kept because a kept execution's cache hit still uses their data.
    kept_for_cache: list[str] = field(default_factory=list)

    def summary(self) -> str:
        kept = f"; kept {len(self.kept_for_cache)} whose data younger cache hits use" if self.kept_for_cache else ""
        return (f"removed {len(self.executions)} execution(s), {self.cache_entries} cache entr(y/ies) and "
                f"{self.audit_events} audit event(s){kept}")


def collect(ctx: Context, older_than: timedelta, now: datetime | None = None) -> GcReport:
    """Remove what ended before `now - older_than` (see the module docstring)."""
    now = now or ctx.clock.now()
    cutoff = now - older_than
    report = GcReport()
    with ctx.db.session() as s:
        candidates = _finished_before(s, cutoff)
        hit = _artifacts_hit_by_kept(s, candidates)
        entries = s.scalars(select(CatalogArtifact)).all()
    kept_entries = [e for e in entries if as_utc(e.created_at) >= cutoff or e.artifact_id in hit]
    protected = {k for k in map(_source_key, kept_entries) if k is not None}
    for key in sorted(protected & set(candidates)):
        report.kept_for_cache.append("/".join(key))
        del candidates[key]
    _drop_orphaned_children(candidates)
    doomed = [e for e in entries if e not in kept_entries]
    report.cache_entries = _remove_cache_entries(ctx, doomed)
    keys = sorted(candidates)
    for start in range(0, len(keys), BATCH):
        chunk = {k: candidates[k] for k in keys[start:start + BATCH]}
        _remove_executions(ctx, chunk)
        report.executions.extend("/".join(k) for k in chunk)
    audit_age = ctx.config.gc.audit_older_than
    audit_cutoff = now - (timedelta(seconds=parse_duration(audit_age)) if audit_age else older_than)
    with ctx.db.session() as s:
        report.audit_events = changed_rows(s, delete(AuditEvent).where(AuditEvent.at < audit_cutoff))
    log.info("gc (older than %s): %s", older_than, report.summary())
    return report


@dataclass
class _Candidate:
    raw_prefix: str
    parent: ExecutionKey | None


def _finished_before(s, cutoff: datetime) -> dict[ExecutionKey, _Candidate]:
    """Executions in a terminal phase, last changed before the cutoff, that the engine has finished too."""
    rows = s.execute(
        select(Execution, FlyteWorkflow.done)
        .outerjoin(FlyteWorkflow, (FlyteWorkflow.project == Execution.project)
                   & (FlyteWorkflow.domain == Execution.domain) & (FlyteWorkflow.name == Execution.name))
        .where(Execution.phase.in_([int(p) for p in WORKFLOW_TERMINAL]), Execution.updated_at < cutoff,
               or_(FlyteWorkflow.done.is_(True), FlyteWorkflow.name.is_(None)))
    ).all()
    parents = _parent_keys(s, [r.Execution.parent_node_execution_id for r in rows])
    out: dict[ExecutionKey, _Candidate] = {}
    for row, _done in rows:
        spec = execution_pb2.ExecutionSpec.FromString(row.spec_pb)
        out[ExecutionKey(row.project, row.domain, row.name)] = _Candidate(
            raw_prefix=spec.raw_output_data_config.output_location_prefix,
            parent=parents.get(row.parent_node_execution_id))
    return out


def _parent_keys(s, node_row_ids: list[int | None]) -> dict[int, ExecutionKey]:
    ids = [i for i in node_row_ids if i is not None]
    if not ids:
        return {}
    rows = s.execute(select(NodeExecution.id, NodeExecution.project, NodeExecution.domain,
                            NodeExecution.execution_name).where(NodeExecution.id.in_(ids))).all()
    return {r.id: ExecutionKey(r.project, r.domain, r.execution_name) for r in rows}


def _drop_orphaned_children(candidates: dict[ExecutionKey, _Candidate]) -> None:
    """A child execution goes only with its parent (a kept parent still shows and may read it)."""
    changed = True
    while changed:
        stay = [k for k, c in candidates.items() if c.parent is not None and c.parent not in candidates]
        for key in stay:
            del candidates[key]
        changed = bool(stay)


def _artifacts_hit_by_kept(s, candidates: dict[ExecutionKey, _Candidate]) -> set[str]:
    """Artifact ids of cache entries that node executions of kept executions hit."""
    hit: set[str] = set()
    query = select(NodeExecution.project, NodeExecution.domain, NodeExecution.execution_name,
                   NodeExecution.closure_pb)
    for project, domain, name, closure_pb in s.execute(query):
        if (project, domain, name) in candidates:
            continue
        meta = node_execution_pb2.NodeExecutionClosure.FromString(closure_pb).task_node_metadata
        if meta.cache_status == catalog_pb2.CACHE_HIT and meta.catalog_key.artifact_tag.artifact_id:
            hit.add(meta.catalog_key.artifact_tag.artifact_id)
    return hit


def _source_key(entry: CatalogArtifact) -> ExecutionKey | None:
    if not entry.source_pb:
        return None
    ex = identifier_pb2.TaskExecutionIdentifier.FromString(entry.source_pb).node_execution_id.execution_id
    return ExecutionKey(ex.project, ex.domain, ex.name)


def _remove_cache_entries(ctx: Context, entries: list[CatalogArtifact]) -> int:
    for entry in entries:
        with ctx.db.session() as s:
            s.execute(delete(CatalogArtifact).where(
                CatalogArtifact.project == entry.project, CatalogArtifact.domain == entry.domain,
                CatalogArtifact.dataset_name == entry.dataset_name,
                CatalogArtifact.dataset_version == entry.dataset_version, CatalogArtifact.tag == entry.tag,
                CatalogArtifact.artifact_id == entry.artifact_id))
        ctx.blobs.delete(entry.outputs_uri.rsplit("/", 1)[0])
    return len(entries)


def _remove_executions(ctx: Context, chunk: dict[ExecutionKey, _Candidate]) -> None:
    """Blobs and files first, rows last: a failure halfway leaves rows that the next run finds again."""
    attempts = _task_attempts(ctx, list(chunk))
    for key, cand in chunk.items():
        ctx.blobs.delete(ctx.blobs.execution_dir(*key))
        raw = cand.raw_prefix or ctx.blobs.raw_output_prefix()
        for node_id, attempt in attempts.get(key, ()):
            ctx.blobs.delete(attempt_raw_prefix(raw, key, node_id, attempt))
        run = f"{key[0]}-{key[1]}-{key[2]}"
        for folder in (ctx.config.logs_dir / run, ctx.config.work_dir / run, ctx.config.attempts_dir / run):
            shutil.rmtree(folder, ignore_errors=True)
    with ctx.db.session() as s:
        for model, name_col in ((ExecutionTag, ExecutionTag.execution_name),
                                (TaskExecution, TaskExecution.execution_name),
                                (NodeExecution, NodeExecution.execution_name), (Signal, Signal.execution_name),
                                (NotificationOutbox, NotificationOutbox.execution_name),
                                (FlyteWorkflow, FlyteWorkflow.name), (Execution, Execution.name)):
            for project, domain, name in chunk:
                s.execute(delete(model).where(model.project == project, model.domain == domain, name_col == name)
                          .execution_options(synchronize_session=False))


def _task_attempts(ctx: Context, keys: list[ExecutionKey]) -> dict[ExecutionKey, set[tuple[str, int]]]:
    """(node id, attempt) of every task attempt of these executions, array items included (their ids are
    `<array node>-n<index>`, recorded on the array node's task executions as external resources)."""
    out: dict[ExecutionKey, set[tuple[str, int]]] = {}
    with ctx.db.session() as s:
        for key in keys:
            rows = s.execute(select(TaskExecution.node_id, TaskExecution.retry_attempt, TaskExecution.closure_pb)
                             .where(TaskExecution.project == key[0], TaskExecution.domain == key[1],
                                    TaskExecution.execution_name == key[2])).all()
            attempts = out.setdefault(key, set())
            for node_id, attempt, closure_pb in rows:
                attempts.add((node_id, attempt))
                for res in _external_resources(closure_pb):
                    attempts.add((f"{node_id}-n{res.index}", res.retry_attempt))
    return out


def _external_resources(closure_pb: bytes):
    return task_execution_pb2.TaskExecutionClosure.FromString(closure_pb).metadata.external_resources



