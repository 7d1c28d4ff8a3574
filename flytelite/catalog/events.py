"""What the catalog contributes to flyteidl events: CatalogMetadata, TaskNodeMetadata, reservation owners (pure)."""

from __future__ import annotations

from flyteidl.core import catalog_pb2, identifier_pb2
from flyteidl.event import event_pb2

from flytelite.catalog.keys import CatalogKey

CacheStatus = catalog_pb2.CatalogCacheStatus
ReservationStatus = catalog_pb2.CatalogReservation.Status


def catalog_metadata(key: CatalogKey, artifact_id: str = "",
                     source: identifier_pb2.TaskExecutionIdentifier | None = None) -> catalog_pb2.CatalogMetadata:
    """CatalogMetadata as FlytePropeller reports it: the dataset id, the artifact tag, and where the
    cached outputs came from (set on hits; FlyteConsole links to that execution)."""
    md = catalog_pb2.CatalogMetadata(
        dataset_id=key.dataset_id(),
        artifact_tag=catalog_pb2.CatalogArtifactTag(artifact_id=artifact_id, name=key.tag),
    )
    if source is not None:
        md.source_task_execution.CopyFrom(source)
    return md


def task_node_metadata(cache_status: catalog_pb2.CatalogCacheStatus,
                       catalog_key: catalog_pb2.CatalogMetadata | None = None,
                       reservation_status: ReservationStatus = ReservationStatus.RESERVATION_DISABLED,
                       ) -> event_pb2.TaskNodeMetadata:
    """The TaskNodeMetadata of a node event: cache status (CACHE_HIT, CACHE_POPULATED, ...), the
    catalog key it refers to, and the reservation status of a cache-serialized task."""
    md = event_pb2.TaskNodeMetadata(cache_status=cache_status, reservation_status=reservation_status)
    if catalog_key is not None:
        md.catalog_key.CopyFrom(catalog_key)
    return md


def source_task_execution(task_id: identifier_pb2.Identifier, execution_id: identifier_pb2.WorkflowExecutionIdentifier,
                          node_id: str, retry_attempt: int) -> identifier_pb2.TaskExecutionIdentifier:
    """The TaskExecutionIdentifier of the attempt whose outputs are being cached (Catalog.put's source)."""
    return identifier_pb2.TaskExecutionIdentifier(
        task_id=task_id, retry_attempt=retry_attempt,
        node_execution_id=identifier_pb2.NodeExecutionIdentifier(node_id=node_id, execution_id=execution_id),
    )


def reservation_owner_id(execution_id: identifier_pb2.WorkflowExecutionIdentifier, node_id: str, attempt: int) -> str:
    """Who asks for a reservation: one attempt of one node of one execution (as FlytePropeller builds it).

    `node_id` must be the node's unique id within the execution (nested nodes included), so two
    nodes never share an owner id and a retry is a new owner.
    """
    return f"{execution_id.project}/{execution_id.domain}/{execution_id.name}/{node_id}/{attempt}"
