"""The cache (Flyte's DataCatalog): task outputs memoized by task, cache_version, interface and inputs.

`Catalog(ctx)` is the one facade; `catalog_key(template, inputs)` builds keys (see keys.py for what
is hashed). The task node handler (and the array node, per item) uses it the way FlytePropeller's
node executor uses DataCatalog, with `inputs` the node's input LiteralMap, `template` the task the
node runs (for a map task item: the item's task and the item's own inputs):

    if is_cacheable(template):                        # @task(cache=True, cache_version=...)
        key = catalog_key(template, inputs)          # InvalidArgument (no cache_version): fail the node
        owner = reservation_owner_id(exec_id, node_id, attempt)

    # Before the task starts (node queued; again on each evaluation while waiting, see below):
    if overwrite_cache:                                # execution spec / remote.execute(overwrite_cache=True)
        cache_status = CACHE_SKIPPED                   # do not look; re-run and replace below
    elif (hit := catalog.get(key)) is not None:
        blobs.write_proto(node outputs.pb, hit.outputs)
        # succeed now, start no process; the node event carries
        # task_node_metadata(CACHE_HIT, hit.metadata()) (metadata has dataset id, tag, source execution)
    else:
        cache_status = CACHE_MISS
    # get() raises only when the database or blob store fails: report CACHE_LOOKUP_FAILURE and run.

    # cache_serialize=True, no hit, not overwriting: on every evaluation before and while running
    if is_cache_serializable(template) and not overwrite_cache:
        r = catalog.get_or_extend_reservation(key, owner, heartbeat_interval=engine resync period)
        if r.acquired and the task has not started:
            look once more (catalog.get): the previous owner may have put and released between the
            look above and this acquire; on a hit release the reservation and succeed as a CACHE_HIT.
        if not r.acquired and the task has not started:
            stay Queued with reason "waiting on serialized cache", reservation_status r.status
            (RESERVATION_EXISTS); requeue within r.heartbeat_interval and re-check catalog.get(key)
            first next time: the owner's put turns the wait into a CACHE_HIT.
        # Once running, each call is the heartbeat; the reservation expires after 3 heartbeat
        # intervals without one, and then a waiting node acquires it (a crashed owner's key is freed).
        # A running task that lost its reservation keeps running (as in Flyte).

    # On success, when the task declares outputs (Flyte reports CACHE_DISABLED for none):
    try:
        entry = catalog.put(key, outputs, source_task_execution(task_id, exec_id, node_id, attempt),
                            overwrite=overwrite_cache)
        node event: task_node_metadata(CACHE_POPULATED, entry.metadata())
    except Exception:                                  # log it; a cache write never fails a node
        node event: task_node_metadata(CACHE_PUT_FAILURE, catalog_metadata(key)); the node still succeeds
    if serializable: catalog.release_reservation(key, owner)  -> RESERVATION_RELEASED
    # Flyte leaves a failed or aborted owner's reservation to expire; releasing it there is kinder.

`flytelite cache list|clear` (cli.py) reads and evicts entries with the server running. The
catalog never runs tasks and never decides node phases; it only answers and stores.
"""

from flytelite.catalog.events import (
    CacheStatus,
    ReservationStatus,
    catalog_metadata,
    reservation_owner_id,
    source_task_execution,
    task_node_metadata,
)
from flytelite.catalog.keys import CatalogKey, catalog_key, is_cache_serializable, is_cacheable
from flytelite.catalog.store import (
    HEARTBEAT_GRACE_MULTIPLIER,
    MAX_HEARTBEAT_INTERVAL,
    Catalog,
    CatalogEntry,
    Reservation,
)

__all__ = [
    "HEARTBEAT_GRACE_MULTIPLIER",
    "MAX_HEARTBEAT_INTERVAL",
    "CacheStatus",
    "Catalog",
    "CatalogEntry",
    "CatalogKey",
    "Reservation",
    "ReservationStatus",
    "catalog_key",
    "catalog_metadata",
    "is_cache_serializable",
    "is_cacheable",
    "reservation_owner_id",
    "source_task_execution",
    "task_node_metadata",
]
