"""What the catalog puts into node events: TaskNodeMetadata with the cache status, catalog key and reservation."""

from __future__ import annotations

from flyteidl.core import catalog_pb2, identifier_pb2

from flytelite.catalog import (
    CacheStatus,
    ReservationStatus,
    catalog_key,
    catalog_metadata,
    reservation_owner_id,
    source_task_execution,
    task_node_metadata,
)
from tests.catalog.helpers import inputs, template

EXEC = identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development", name="abc")


def test_a_hit_reports_the_key_and_the_execution_that_computed_it():
    tmpl = template()
    key = catalog_key(tmpl, inputs())
    source = source_task_execution(tmpl.id, EXEC, "n1", 2)
    md = task_node_metadata(CacheStatus.CACHE_HIT, catalog_metadata(key, "art1", source))
    assert md.cache_status == catalog_pb2.CACHE_HIT
    assert md.reservation_status == catalog_pb2.CatalogReservation.RESERVATION_DISABLED
    assert md.catalog_key.dataset_id.resource_type == identifier_pb2.DATASET
    assert md.catalog_key.dataset_id.name == key.dataset_name
    assert md.catalog_key.artifact_tag.name == key.tag and md.catalog_key.artifact_tag.artifact_id == "art1"
    src = md.catalog_key.source_task_execution
    assert (src.node_execution_id.execution_id, src.node_execution_id.node_id, src.retry_attempt) == (EXEC, "n1", 2)
    assert src.task_id == tmpl.id


def test_a_miss_while_waiting_reports_the_reservation():
    md = task_node_metadata(CacheStatus.CACHE_MISS, reservation_status=ReservationStatus.RESERVATION_EXISTS)
    assert md.cache_status == catalog_pb2.CACHE_MISS and not md.HasField("catalog_key")
    assert md.reservation_status == catalog_pb2.CatalogReservation.RESERVATION_EXISTS


def test_owner_ids_differ_per_execution_node_and_attempt():
    ids = {reservation_owner_id(EXEC, "n0", 0), reservation_owner_id(EXEC, "n0", 1),
           reservation_owner_id(EXEC, "n1", 0),
           reservation_owner_id(identifier_pb2.WorkflowExecutionIdentifier(
               project="flytesnacks", domain="development", name="other"), "n0", 0)}
    assert len(ids) == 4
    assert reservation_owner_id(EXEC, "n0", 0) == reservation_owner_id(EXEC, "n0", 0)
