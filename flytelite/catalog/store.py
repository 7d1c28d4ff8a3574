"""The catalog's storage: cached outputs (DataCatalog artifacts) and cache reservations.

An artifact row (store.models.CatalogArtifact) points at the outputs LiteralMap in the blob store:
`<blob root>/catalog/<project>/<domain>/<dataset name>/<artifact id>/outputs.pb`; every put writes
a fresh artifact id, so a blob is never rewritten in place. Reservations (CatalogReservation) live
in the database only.

Safe between threads and between server processes sharing one database: every decision is one
conditional SQL statement or rests on the primary key's uniqueness, never on an in-process lock.
It must never run a task or decide what a node does; that is the task node handler's job.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

from flyteidl.core import catalog_pb2, identifier_pb2, literals_pb2
from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from flytelite.catalog.events import catalog_metadata
from flytelite.catalog.keys import CatalogKey
from flytelite.context import Context
from flytelite.errors import FlyteliteError
from flytelite.store.models import CatalogArtifact, CatalogReservation
from flytelite.store.statements import changed_rows

log = logging.getLogger(__name__)

# DataCatalog's defaults: a reservation lasts three heartbeats, and a heartbeat is at most 10 s.
HEARTBEAT_GRACE_MULTIPLIER = 3
MAX_HEARTBEAT_INTERVAL = timedelta(seconds=10)
# Races (a row changing between two statements) are retried this many times before giving up.
_RACE_RETRIES = 8

Reserved = catalog_pb2.CatalogReservation


@dataclass(frozen=True)
class CatalogEntry:
    """A cached result: the key it answers, the outputs, and the task execution that computed them."""

    key: CatalogKey
    artifact_id: str
    outputs_uri: str
    created_at: datetime
    source: identifier_pb2.TaskExecutionIdentifier | None
    # Read only by Catalog.get (listing does not open every blob).
    outputs: literals_pb2.LiteralMap | None = None

    def metadata(self) -> catalog_pb2.CatalogMetadata:
        """The flyteidl CatalogMetadata events carry for this entry (dataset id, tag, source)."""
        return catalog_metadata(self.key, artifact_id=self.artifact_id, source=self.source)


@dataclass(frozen=True)
class Reservation:
    """The answer to get_or_extend_reservation: who holds the key, and until when."""

    key: CatalogKey
    owner_id: str
    expires_at: datetime
    heartbeat_interval: timedelta
    # True when the caller holds it (acquired now, or extended).
    acquired: bool

    @property
    def status(self) -> catalog_pb2.CatalogReservation.Status:
        """flyteidl CatalogReservation.Status: RESERVATION_ACQUIRED, or RESERVATION_EXISTS (someone else)."""
        return Reserved.RESERVATION_ACQUIRED if self.acquired else Reserved.RESERVATION_EXISTS


class Catalog:
    """The cache: get/put entries, list/clear them, and cache reservations (see flytelite.catalog)."""

    def __init__(self, ctx: Context, max_heartbeat_interval: timedelta = MAX_HEARTBEAT_INTERVAL):
        self.ctx = ctx
        self.db = ctx.db
        self.blobs = ctx.blobs
        self.max_heartbeat_interval = max_heartbeat_interval

    # -- entries ------------------------------------------------------------------
    def get(self, key: CatalogKey) -> CatalogEntry | None:
        """The cached entry with its outputs read, or None on a miss."""
        for _ in range(_RACE_RETRIES):
            row = self._row(key)
            if row is None:
                return None
            entry = _entry(row)
            try:
                outputs = self.blobs.read_proto(entry.outputs_uri, literals_pb2.LiteralMap)
            except FileNotFoundError:
                # Overwritten or cleared since we read the row: look again; a row whose blob is gone is a miss.
                again = self._row(key)
                if again is not None and again.artifact_id != row.artifact_id:
                    continue
                log.warning("cache entry %s lost its outputs at %s; treating it as a miss", key, entry.outputs_uri)
                return None
            return CatalogEntry(key, entry.artifact_id, entry.outputs_uri, entry.created_at, entry.source, outputs)
        return None

    def put(self, key: CatalogKey, outputs: literals_pb2.LiteralMap,
            source: identifier_pb2.TaskExecutionIdentifier | None = None, *, overwrite: bool = False) -> CatalogEntry:
        """Cache `outputs` under `key` and return the entry the key now answers with.

        Without overwrite the first writer wins (like DataCatalog's AddTag answering AlreadyExists):
        a put for a key that already has an entry keeps that entry and returns it. With overwrite
        the new outputs replace the old ones (DataCatalog's UpdateArtifact, or create when absent).
        """
        artifact_id = uuid.uuid4().hex
        uri = self._outputs_uri(key, artifact_id)
        self.blobs.write_proto(uri, outputs)
        now = _utc(self.ctx.clock.now())
        values = dict(
            project=key.project, domain=key.domain, dataset_name=key.dataset_name,
            dataset_version=key.dataset_version, tag=key.tag, task_name=key.task_name,
            cache_version=key.cache_version, artifact_id=artifact_id, outputs_uri=uri,
            source_pb=source.SerializeToString() if source is not None else None, created_at=now,
        )
        mine = CatalogEntry(key, artifact_id, uri, now, source, outputs)
        for _ in range(_RACE_RETRIES):
            existing = self._row(key)
            if existing is None:
                try:
                    with self.db.session() as s:
                        s.execute(insert(CatalogArtifact).values(**values))
                    return mine
                except IntegrityError:
                    continue  # someone else put the same key meanwhile: look again
            if not overwrite:
                self.blobs.delete(self._artifact_dir(uri))
                return _entry(existing)
            # Compare-and-swap on the artifact id, so two overwrites never both think they won.
            with self.db.session() as s:
                swapped = changed_rows(
                    s, update(CatalogArtifact).where(_matches(CatalogArtifact, key),
                                                     CatalogArtifact.artifact_id == existing.artifact_id)
                    .values(**values)
                )
            if swapped:
                self.blobs.delete(self._artifact_dir(existing.outputs_uri))
                return mine
        self.blobs.delete(self._artifact_dir(uri))
        raise FlyteliteError(f"could not cache outputs for {key}: the entry kept changing under concurrent writers; "
                             "the task's outputs are fine, only the cache write was given up")

    def list(self, task_name: str | None = None, project: str | None = None,
             domain: str | None = None) -> list[CatalogEntry]:
        """Entries newest first (outputs not read), optionally for one task name / project / domain."""
        stmt = select(CatalogArtifact).order_by(CatalogArtifact.created_at.desc())
        for column, value in ((CatalogArtifact.task_name, task_name), (CatalogArtifact.project, project),
                              (CatalogArtifact.domain, domain)):
            if value is not None:
                stmt = stmt.where(column == value)
        with self.db.session() as s:
            rows = s.scalars(stmt).all()
        return [_entry(r) for r in rows]

    def clear(self, task_name: str | None = None, project: str | None = None, domain: str | None = None) -> int:
        """Evict entries (all, or one task name / project / domain's) and their blobs; returns how many."""
        cleared = 0
        for entry in self.list(task_name, project, domain):
            with self.db.session() as s:
                # Only the artifact we listed: an entry overwritten meanwhile is newer than the clear.
                gone = changed_rows(s, delete(CatalogArtifact).where(
                    _matches(CatalogArtifact, entry.key), CatalogArtifact.artifact_id == entry.artifact_id))
            if gone:
                self.blobs.delete(self._artifact_dir(entry.outputs_uri))
                cleared += 1
        return cleared

    # -- reservations -------------------------------------------------------------
    def get_or_extend_reservation(self, key: CatalogKey, owner_id: str,
                                  heartbeat_interval: timedelta | float) -> Reservation:
        """Acquire the key's reservation if it is free or expired, extend it if `owner_id` holds it,
        else report who holds it. The reservation expires after three heartbeat intervals (the
        interval is capped at max_heartbeat_interval), so the owner must call again at least that often."""
        if not isinstance(heartbeat_interval, timedelta):
            heartbeat_interval = timedelta(seconds=heartbeat_interval)
        interval = min(heartbeat_interval, self.max_heartbeat_interval)
        for _ in range(_RACE_RETRIES):
            now = _utc(self.ctx.clock.now())
            expires = now + interval * HEARTBEAT_GRACE_MULTIPLIER
            values = dict(owner_id=owner_id, expires_at=expires, heartbeat_seconds=interval.total_seconds(),
                          updated_at=now)
            with self.db.session() as s:
                taken = changed_rows(
                    s, update(CatalogReservation)
                    .where(_matches(CatalogReservation, key),
                           or_(CatalogReservation.owner_id == owner_id, CatalogReservation.expires_at <= now))
                    .values(**values)
                )
            if taken:
                return Reservation(key, owner_id, expires, interval, acquired=True)
            try:
                with self.db.session() as s:
                    s.execute(insert(CatalogReservation).values(**_key_columns(key), created_at=now, **values))
                return Reservation(key, owner_id, expires, interval, acquired=True)
            except IntegrityError:
                pass
            with self.db.session() as s:
                held = s.scalars(select(CatalogReservation).where(_matches(CatalogReservation, key))).first()
            if held is not None:
                return Reservation(key, held.owner_id, _utc(held.expires_at),
                                   timedelta(seconds=held.heartbeat_seconds), acquired=held.owner_id == owner_id)
            # Released between our insert and our read: try again.
        raise FlyteliteError(f"could not get or extend the cache reservation of {key}: it kept changing hands; "
                             "the node will try again on its next evaluation")

    def release_reservation(self, key: CatalogKey, owner_id: str) -> bool:
        """Release the reservation if `owner_id` holds it; True when it did (never an error otherwise)."""
        with self.db.session() as s:
            return bool(changed_rows(s, delete(CatalogReservation).where(
                _matches(CatalogReservation, key), CatalogReservation.owner_id == owner_id)))

    # -- helpers ------------------------------------------------------------------
    def _row(self, key: CatalogKey) -> CatalogArtifact | None:
        with self.db.session() as s:
            return s.scalars(select(CatalogArtifact).where(_matches(CatalogArtifact, key))).first()

    def _outputs_uri(self, key: CatalogKey, artifact_id: str) -> str:
        # Only the dataset name is user text; quote it so a task name can never leave the catalog folder.
        return self.blobs.join(self.blobs.root, "catalog", quote(key.project, safe=""), quote(key.domain, safe=""),
                               quote(key.dataset_name, safe="._-"), artifact_id, "outputs.pb")

    def _artifact_dir(self, outputs_uri: str) -> str:
        return outputs_uri.rsplit("/", 1)[0]


def _key_columns(key: CatalogKey) -> dict[str, str]:
    return dict(project=key.project, domain=key.domain, dataset_name=key.dataset_name,
                dataset_version=key.dataset_version, tag=key.tag)


def _matches(model, key: CatalogKey):
    return and_(*(getattr(model, column) == value for column, value in _key_columns(key).items()))


def _entry(row: CatalogArtifact) -> CatalogEntry:
    source = None
    if row.source_pb:
        source = identifier_pb2.TaskExecutionIdentifier()
        source.ParseFromString(row.source_pb)
    key = CatalogKey(project=row.project, domain=row.domain, task_name=row.task_name,
                     cache_version=row.cache_version, dataset_version=row.dataset_version, tag=row.tag)
    return CatalogEntry(key, row.artifact_id, row.outputs_uri, _utc(row.created_at), source)


def _utc(dt: datetime) -> datetime:
    # SQLite hands back naive datetimes and compares them as text: keep every value in UTC.
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
