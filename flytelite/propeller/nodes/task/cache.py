"""Node-level caching of task outputs: FlytePropeller's nodes/cache.go and the cache steps of nodes/executor.go.

One cacheable task run (a task node's attempt, or one item of a map task) makes three calls:

    check = before_run(run, state)   # every evaluation, before the plugin is asked: HIT, WAIT or RUN
    md = after_success(run, state)   # once the task succeeded: store its outputs, release the reservation
    release(run, state)              # whenever the attempt ends (failed, aborted, retried): free the key

`run` (CacheRun) says what runs where; `state` (CacheState) is what must survive between
evaluations and restarts, and the caller persists it (a task node keeps it in TaskStatus.cache).
A HIT has already written the cached outputs to `run.outputs_uri`: the caller succeeds without
starting anything. WAIT means another execution computes the same key (cache_serialize): stay
queued and look again after `check.recheck_after` seconds. RUN means start or keep running the
task; a cache-serialized owner must be evaluated again within `check.recheck_after` seconds, since
each before_run is the reservation's heartbeat.

This module never starts a task and never decides a node phase; it only asks and tells the catalog.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from flyteidl.core import identifier_pb2, literals_pb2, tasks_pb2
from flyteidl.event import event_pb2

from flytelite.catalog import (
    MAX_HEARTBEAT_INTERVAL,
    CacheStatus,
    Catalog,
    CatalogEntry,
    CatalogKey,
    ReservationStatus,
    catalog_key,
    catalog_metadata,
    is_cache_serializable,
    is_cacheable,
    reservation_owner_id,
    source_task_execution,
    task_node_metadata,
)
from flytelite.context import Context

log = logging.getLogger(__name__)

# FlytePropeller's reason for a node kept queued by someone else's reservation.
WAITING_REASON = "waiting on serialized cache"
# A waiting run looks for the owner's result at least this often (the owner's put ends the wait).
WAIT_POLL_SECONDS = 1.0


class CacheAction(Enum):
    HIT = "hit"
    WAIT = "wait"
    RUN = "run"


@dataclass(frozen=True)
class CacheRun:
    """One attempt of one cacheable task run, as the catalog needs to see it."""

    ctx: Context
    task: tasks_pb2.TaskTemplate
    # The run's input LiteralMap, read only when the key is first needed.
    inputs: Callable[[], literals_pb2.LiteralMap]
    # Where the run's outputs.pb is (written here on a hit, read from here after success).
    outputs_uri: str
    execution_id: identifier_pb2.WorkflowExecutionIdentifier
    # Unique within the execution (nested and map-item runs included): it names the reservation owner.
    node_id: str
    attempt: int
    # The execution's overwrite_cache: do not look, run, and replace the entry.
    overwrite: bool = False
    # How often a running owner renews its reservation, which lasts three of DataCatalog's longest heartbeat
    # intervals (at least twice per interval, so that a renewal late by a loaded round or a replica's death
    # still leaves most of it).
    renew_seconds: float = MAX_HEARTBEAT_INTERVAL.total_seconds() / 2

    @property
    def owner_id(self) -> str:
        return reservation_owner_id(self.execution_id, self.node_id, self.attempt)

    @property
    def serialized(self) -> bool:
        return is_cache_serializable(self.task) and not self.overwrite


@dataclass
class CacheState:
    """What the catalog told this attempt so far (JSON-able; persisted by the caller)."""

    # CatalogKey fields once computed (the inputs are hashed once per attempt).
    key: dict[str, str] | None = None
    # flyteidl CatalogCacheStatus of the lookup (then of the put).
    status: CacheStatus = CacheStatus.CACHE_DISABLED
    reservation: ReservationStatus = ReservationStatus.RESERVATION_DISABLED
    # True while this attempt holds the key's reservation (release it when the attempt ends).
    held: bool = False
    # True once before_run said RUN: from then on it only heartbeats, it never looks again.
    started: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CacheState:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})


@dataclass(frozen=True)
class CacheCheck:
    action: CacheAction
    # TaskNodeMetadata for the node event this evaluation reports (None: the task is not cached).
    metadata: event_pb2.TaskNodeMetadata | None = None
    # Evaluate again within this many seconds (waiting, or heartbeating a held reservation).
    recheck_after: float | None = None


def before_run(run: CacheRun, state: CacheState) -> CacheCheck:
    """Look in the cache and take or extend the reservation, as FlytePropeller does before and while a
    task runs. Raises flytelite.errors.InvalidArgument when the task is cached without a cache_version."""
    if not is_cacheable(run.task):
        return CacheCheck(CacheAction.RUN)
    key = _key(run, state)
    catalog = Catalog(run.ctx)
    if state.started:
        if run.serialized:
            _reserve(catalog, run, key, state)
            return CacheCheck(CacheAction.RUN, _metadata(key, state), run.renew_seconds)
        return CacheCheck(CacheAction.RUN, _metadata(key, state))

    if run.overwrite:
        state.status = CacheStatus.CACHE_SKIPPED
    else:
        entry = _lookup(catalog, key, state)
        if entry is not None:
            return _hit(run, state, entry)
        if run.serialized:
            acquired = _reserve(catalog, run, key, state)
            if not acquired:
                return CacheCheck(CacheAction.WAIT, _metadata(key, state), WAIT_POLL_SECONDS)
            # The previous owner may have put and released between our look and our acquire.
            entry = _lookup(catalog, key, state)
            if entry is not None:
                release(run, state)
                return _hit(run, state, entry)
    state.started = True
    return CacheCheck(CacheAction.RUN, _metadata(key, state), run.renew_seconds if state.held else None)


def after_success(run: CacheRun, state: CacheState) -> event_pb2.TaskNodeMetadata:
    """Store the run's outputs (FlytePropeller's WriteCatalogCache) and release the reservation; the
    TaskNodeMetadata of the SUCCEEDED event. A failed write is reported, never raised: the task succeeded."""
    if not is_cacheable(run.task):
        return task_node_metadata(CacheStatus.CACHE_DISABLED)
    key = _key(run, state)
    if state.status == CacheStatus.CACHE_HIT:
        return _metadata(key, state)
    md: event_pb2.TaskNodeMetadata
    if not len(run.task.interface.outputs.variables):
        # Nothing to cache: Flyte reports such a run as CACHE_DISABLED.
        state.status = CacheStatus.CACHE_DISABLED
        md = task_node_metadata(CacheStatus.CACHE_DISABLED)
    else:
        try:
            outputs = run.ctx.blobs.read_proto(run.outputs_uri, literals_pb2.LiteralMap)
            source = source_task_execution(run.task.id, run.execution_id, run.node_id, run.attempt)
            entry = Catalog(run.ctx).put(key, outputs, source, overwrite=run.overwrite)
            state.status = CacheStatus.CACHE_POPULATED
            md = task_node_metadata(CacheStatus.CACHE_POPULATED, entry.metadata())
        except Exception:  # noqa: BLE001 - a cache write never fails a node
            log.exception("caching the outputs of %s (node %s of %s) failed", run.task.id.name, run.node_id,
                          run.execution_id.name)
            state.status = CacheStatus.CACHE_PUT_FAILURE
            md = task_node_metadata(CacheStatus.CACHE_PUT_FAILURE, catalog_metadata(key))
    release(run, state)
    md.reservation_status = state.reservation
    return md


def release(run: CacheRun, state: CacheState) -> None:
    """Give up the reservation this attempt holds, if any (safe to call more than once)."""
    if not state.held or state.key is None:
        return
    state.held = False
    try:
        Catalog(run.ctx).release_reservation(CatalogKey(**state.key), run.owner_id)
        state.reservation = ReservationStatus.RESERVATION_RELEASED
    except Exception:  # noqa: BLE001 - an unreleased reservation expires on its own
        log.exception("releasing the cache reservation of %s failed; it will expire", run.owner_id)
        state.reservation = ReservationStatus.RESERVATION_FAILURE


def _key(run: CacheRun, state: CacheState) -> CatalogKey:
    if state.key is None:
        state.key = dataclasses.asdict(catalog_key(run.task, run.inputs()))
    return CatalogKey(**state.key)


def _lookup(catalog: Catalog, key: CatalogKey, state: CacheState) -> CatalogEntry | None:
    try:
        entry = catalog.get(key)
    except Exception:  # noqa: BLE001 - a broken cache must not stop the task from running
        log.exception("looking up %s in the cache failed; running the task", key)
        state.status = CacheStatus.CACHE_LOOKUP_FAILURE
        return None
    state.status = CacheStatus.CACHE_MISS if entry is None else CacheStatus.CACHE_HIT
    return entry


def _reserve(catalog: Catalog, run: CacheRun, key: CatalogKey, state: CacheState) -> bool:
    """Get or extend the reservation; True when this attempt holds it (or the catalog failed: run anyway)."""
    try:
        reservation = catalog.get_or_extend_reservation(key, run.owner_id, MAX_HEARTBEAT_INTERVAL)
    except Exception:  # noqa: BLE001 - without a reservation we compute, possibly twice; never stall
        log.exception("the cache reservation of %s failed; running without it", key)
        state.reservation = ReservationStatus.RESERVATION_FAILURE
        return True
    state.held = reservation.acquired
    state.reservation = reservation.status
    # A running owner that lost its (expired) reservation keeps running, as in Flyte.
    return reservation.acquired


def _hit(run: CacheRun, state: CacheState, entry: CatalogEntry) -> CacheCheck:
    if entry.outputs is not None and len(run.task.interface.outputs.variables):
        run.ctx.blobs.write_proto(run.outputs_uri, entry.outputs)
    state.status = CacheStatus.CACHE_HIT
    return CacheCheck(CacheAction.HIT, task_node_metadata(CacheStatus.CACHE_HIT, entry.metadata(),
                                                          state.reservation))


def _metadata(key: CatalogKey, state: CacheState) -> event_pb2.TaskNodeMetadata:
    return task_node_metadata(state.status, catalog_metadata(key), state.reservation)
