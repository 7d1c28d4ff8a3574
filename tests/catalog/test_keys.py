"""The cache key: what changes it and what must not (keys built from real flytekit templates and inputs)."""

from __future__ import annotations

import multiprocessing

import pytest
from flyteidl.core import identifier_pb2, literals_pb2

from flytelite.catalog import catalog_key, is_cache_serializable, is_cacheable
from flytelite.catalog.keys import hash_literal_map, interface_signature
from flytelite.errors import InvalidArgument
from tests.catalog import helpers
from tests.catalog.helpers import inputs, key_in_subprocess, template


def test_key_names_the_dataset_and_tag_like_datacatalog():
    tmpl = template(project="proj", domain="staging")
    key = catalog_key(tmpl, inputs())
    assert (key.project, key.domain) == ("proj", "staging")
    assert key.task_name == tmpl.id.name and key.task_name.endswith("helpers.square")
    assert key.dataset_name == f"flyte_task-{tmpl.id.name}"
    assert key.cache_version == "1.0"
    assert key.dataset_version == f"1.0-{interface_signature(tmpl.interface)}"
    inputs_hash, outputs_hash = interface_signature(tmpl.interface).split("-")
    assert len(inputs_hash) == len(outputs_hash) == 8
    assert key.tag.startswith("flyte_cached-") and len(key.tag) == len("flyte_cached-") + 43
    assert key.dataset_id() == identifier_pb2.Identifier(
        resource_type=identifier_pb2.DATASET, project="proj", domain="staging",
        name=key.dataset_name, version=key.dataset_version)


def test_cacheable_flags_follow_the_task_decorator():
    assert is_cacheable(template()) and is_cache_serializable(template())
    assert is_cacheable(template(helpers.square_v2)) and not is_cache_serializable(template(helpers.square_v2))
    assert not is_cacheable(template(helpers.uncached)) and not is_cache_serializable(template(helpers.uncached))


def test_same_task_and_inputs_give_the_same_key():
    assert catalog_key(template(), inputs()) == catalog_key(template(), inputs())


def test_key_is_the_same_in_another_process():
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        other = pool.apply(key_in_subprocess, ("v1",))
    assert other == catalog_key(template(), inputs())


@pytest.mark.parametrize("change", [dict(x=4), dict(label="beta one")])
def test_a_changed_input_misses(change):
    base = catalog_key(template(), inputs())
    changed = catalog_key(template(), inputs(**change))
    assert changed.tag != base.tag
    assert changed.dataset_version == base.dataset_version


def test_a_changed_cache_version_misses_even_with_the_same_interface():
    v1 = catalog_key(template(helpers.square), inputs())
    v2 = catalog_key(template(helpers.square_v2), inputs())
    assert v1.dataset_version.split("-", 1)[1] == v2.dataset_version.split("-", 1)[1]
    assert v1.dataset_version != v2.dataset_version


def test_a_changed_interface_misses_with_the_same_cache_version():
    a = catalog_key(template(helpers.square), inputs())
    b = catalog_key(template(helpers.square_renamed_output), inputs())
    assert a.cache_version == b.cache_version
    assert a.dataset_version != b.dataset_version


def test_a_new_task_version_still_hits():
    assert catalog_key(template(version="v1"), inputs()) == catalog_key(template(version="v2"), inputs())


def test_ignored_inputs_are_left_out():
    assert catalog_key(template(), inputs(seed=1)).tag == catalog_key(template(), inputs(seed=2)).tag
    # square_v2 does not ignore seed.
    v2 = template(helpers.square_v2)
    assert catalog_key(v2, inputs(seed=1)).tag != catalog_key(v2, inputs(seed=2)).tag


def test_a_literal_with_a_hash_counts_by_its_hash():
    tmpl = template()
    # The HashMethod keeps only the first word: a different value with the same hash hits ...
    same_hash = inputs(label="alpha two")
    assert same_hash.literals["label"].hash == "label:alpha"
    assert catalog_key(tmpl, inputs()).tag == catalog_key(tmpl, same_hash).tag
    # ... the same value with a different hash misses.
    rehashed = inputs()
    rehashed.literals["label"].hash = "something else"
    assert catalog_key(tmpl, inputs()).tag != catalog_key(tmpl, rehashed).tag


def _int(v: int) -> literals_pb2.Literal:
    lit = literals_pb2.Literal()
    lit.scalar.primitive.integer = v
    return lit


def test_hashed_literals_inside_collections_and_maps_count_by_hash():
    def nested(inner_value: int, inner_hash: str) -> literals_pb2.LiteralMap:
        hashed = _int(inner_value)
        hashed.hash = inner_hash
        lm = literals_pb2.LiteralMap()
        lm.literals["xs"].collection.literals.extend([_int(1), hashed])
        lm.literals["m"].map.literals["k"].CopyFrom(hashed)
        return lm

    assert hash_literal_map(nested(1, "h")) == hash_literal_map(nested(2, "h"))
    assert hash_literal_map(nested(1, "h")) != hash_literal_map(nested(1, "g"))


def test_protobuf_map_ordering_does_not_matter():
    def build(order: list[str]) -> literals_pb2.LiteralMap:
        lm = literals_pb2.LiteralMap()
        for name in order:
            lm.literals[name].CopyFrom(_int(ord(name)))
            lm.literals["nested"].map.literals[name].CopyFrom(_int(ord(name)))
        return lm

    forward, backward = build(list("abcdef")), build(list("fedcba"))
    assert hash_literal_map(forward) == hash_literal_map(backward)
    # Parsing the other order's bytes (as another process reading inputs.pb would) changes nothing.
    reparsed = literals_pb2.LiteralMap.FromString(backward.SerializeToString())
    assert hash_literal_map(reparsed) == hash_literal_map(forward)


def test_no_inputs_and_empty_inputs_share_a_tag():
    assert hash_literal_map(None) == hash_literal_map(literals_pb2.LiteralMap())


def test_a_cached_task_without_cache_version_is_refused():
    tmpl = template()
    tmpl.metadata.discovery_version = "  "
    with pytest.raises(InvalidArgument, match="cache_version"):
        catalog_key(tmpl, inputs())
