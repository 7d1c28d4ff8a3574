"""Cached entries on a real SQLite file and blob folder: put, get, overwrite, list, clear, races."""

from __future__ import annotations

import os
import threading

from flyteidl.core import catalog_pb2, identifier_pb2

from flytelite.catalog import Catalog, catalog_key, source_task_execution
from flytelite.storage.blobstore import LOCAL_SCHEME, local_path
from tests.catalog import helpers
from tests.catalog.helpers import inputs, int_outputs, template


def _source(name: str = "exec1", node: str = "n0", attempt: int = 0) -> identifier_pb2.TaskExecutionIdentifier:
    tmpl = template()
    return source_task_execution(
        tmpl.id, identifier_pb2.WorkflowExecutionIdentifier(project="flytesnacks", domain="development", name=name),
        node, attempt)


def _artifact_dirs(ctx) -> list[str]:
    root = os.path.join(ctx.blobs.folder, "catalog")
    found = []
    for dirpath, _dirs, files in os.walk(root):
        if "outputs.pb" in files:
            found.append(LOCAL_SCHEME + dirpath)
    return found


def test_a_miss_is_none(catalog: Catalog):
    assert catalog.get(catalog_key(template(), inputs())) is None


def test_put_then_get_returns_the_outputs_and_their_source(catalog: Catalog, ctx, clock):
    key = catalog_key(template(), inputs())
    stored = catalog.put(key, int_outputs(9), _source())
    hit = catalog.get(key)
    assert hit is not None
    assert hit.outputs == int_outputs(9)
    assert hit.artifact_id == stored.artifact_id
    assert hit.source == _source()
    assert hit.created_at == clock.now()
    assert hit.outputs_uri.startswith(os.path.join(ctx.blobs.root, "catalog", "flytesnacks", "development"))
    # A new task version with the same inputs reads the same entry.
    assert catalog.get(catalog_key(template(version="v2"), inputs())).artifact_id == stored.artifact_id


def test_the_entry_metadata_is_what_node_events_carry(catalog: Catalog):
    key = catalog_key(template(), inputs())
    catalog.put(key, int_outputs(9), _source())
    md = catalog.get(key).metadata()
    assert md.dataset_id == key.dataset_id()
    assert md.artifact_tag == catalog_pb2.CatalogArtifactTag(artifact_id=catalog.get(key).artifact_id, name=key.tag)
    assert md.source_task_execution == _source()


def test_without_overwrite_the_first_put_wins(catalog: Catalog, ctx):
    key = catalog_key(template(), inputs())
    first = catalog.put(key, int_outputs(1), _source("first"))
    second = catalog.put(key, int_outputs(2), _source("second"))
    assert second.artifact_id == first.artifact_id
    assert catalog.get(key).outputs == int_outputs(1)
    assert len(_artifact_dirs(ctx)) == 1


def test_overwrite_replaces_the_entry_and_its_blob(catalog: Catalog, ctx, clock):
    key = catalog_key(template(), inputs())
    first = catalog.put(key, int_outputs(1), _source("first"))
    clock.advance(60)
    second = catalog.put(key, int_outputs(2), _source("second"), overwrite=True)
    hit = catalog.get(key)
    assert hit.artifact_id == second.artifact_id != first.artifact_id
    assert hit.outputs == int_outputs(2)
    assert hit.source == _source("second")
    assert hit.created_at == clock.now()
    assert _artifact_dirs(ctx) == [os.path.dirname(second.outputs_uri)]


def test_overwrite_of_a_missing_entry_creates_it(catalog: Catalog):
    key = catalog_key(template(), inputs())
    catalog.put(key, int_outputs(5), overwrite=True)
    hit = catalog.get(key)
    assert hit.outputs == int_outputs(5) and hit.source is None


def test_an_entry_whose_blob_is_gone_is_a_miss(catalog: Catalog, ctx):
    key = catalog_key(template(), inputs())
    stored = catalog.put(key, int_outputs(5))
    os.remove(local_path(stored.outputs_uri))
    assert catalog.get(key) is None


def test_list_and_clear_by_task_name(catalog: Catalog, ctx, clock):
    square, v2 = template(), template(helpers.square_v2)
    catalog.put(catalog_key(square, inputs(x=1)), int_outputs(1))
    clock.advance(1)
    catalog.put(catalog_key(square, inputs(x=2)), int_outputs(4))
    clock.advance(1)
    catalog.put(catalog_key(v2, inputs(x=1)), int_outputs(1))

    everything = catalog.list()
    assert [e.key.task_name for e in everything] == [v2.id.name, square.id.name, square.id.name]  # newest first
    assert {e.key for e in catalog.list(task_name=square.id.name)} == {
        catalog_key(square, inputs(x=1)), catalog_key(square, inputs(x=2))}
    assert catalog.list(project="other") == []

    assert catalog.clear(task_name=square.id.name) == 2
    assert catalog.get(catalog_key(square, inputs(x=1))) is None
    assert catalog.get(catalog_key(v2, inputs(x=1))).outputs == int_outputs(1)
    assert len(_artifact_dirs(ctx)) == 1
    assert catalog.clear() == 1
    assert catalog.list() == [] and _artifact_dirs(ctx) == []


def test_concurrent_puts_of_one_key_keep_one_entry(catalog: Catalog, ctx):
    key = catalog_key(template(), inputs())
    results, barrier = [], threading.Barrier(8)

    def put(i: int) -> None:
        barrier.wait()
        results.append(catalog.put(key, int_outputs(i)).artifact_id)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1
    assert catalog.get(key).artifact_id == results[0]
    assert len(_artifact_dirs(ctx)) == 1


def test_concurrent_overwrites_leave_one_entry_and_one_blob(catalog: Catalog, ctx):
    key = catalog_key(template(), inputs())
    catalog.put(key, int_outputs(-1))
    barrier = threading.Barrier(6)
    seen: list[int] = []

    def overwrite_and_read(i: int) -> None:
        barrier.wait()
        catalog.put(key, int_outputs(i), overwrite=True)
        hit = catalog.get(key)  # never a miss while others overwrite
        seen.append(hit.outputs.literals["o0"].scalar.primitive.integer)

    threads = [threading.Thread(target=overwrite_and_read, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 6 and set(seen) <= set(range(6))
    final = catalog.get(key)
    assert final.outputs.literals["o0"].scalar.primitive.integer in range(6)
    assert _artifact_dirs(ctx) == [os.path.dirname(final.outputs_uri)]
