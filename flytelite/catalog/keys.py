"""The cache key of a task execution, built the way FlytePropeller builds DataCatalog keys (pure).

A key names a dataset and a tag in it:
- dataset: the task's project and domain, name `flyte_task-<task name>`, version
  `<cache_version>-<inputs hash>-<outputs hash>` where the two hashes are the first 8 characters of
  the hashes of the interface's input and output VariableMaps (so an interface change misses even
  when the cache_version stays);
- tag: `flyte_cached-<hash of the input LiteralMap>`, leaving out `cache_ignore_input_vars`; a
  literal with `hash` set (flytekit's HashMethod / Annotated hashes, offloaded literals) counts by
  that hash alone, and collections and maps are walked so nested hashed literals count by hash too.
The task version is not in the key: re-registering code keeps its hits.

What is hashed: each message is turned into protobuf's canonical JSON mapping (camelCase names,
fields at their default value left out, enums by name, 64-bit integers as strings), serialized
with sorted keys and no whitespace, and hashed with SHA-256, written base64url without padding.
Sorted keys make protobuf map ordering irrelevant, so the key is the same in every process. Flyte
hashes the same JSON with objecthash, so the strings are not bit-identical with Flyte's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from flyteidl.core import identifier_pb2, interface_pb2, literals_pb2, tasks_pb2
from google.protobuf import json_format
from google.protobuf.message import Message

from flytelite.errors import InvalidArgument

DATASET_PREFIX = "flyte_task-"
TAG_PREFIX = "flyte_cached-"
# FlytePropeller keeps this many characters of each interface hash in the dataset version.
_SIGNATURE_HASH_LENGTH = 8


@dataclass(frozen=True)
class CatalogKey:
    """Where one task execution's outputs are cached: a DataCatalog dataset and a tag in it."""

    project: str
    domain: str
    task_name: str
    cache_version: str
    # "<cache_version>-<inputs hash>-<outputs hash>"
    dataset_version: str
    # "flyte_cached-<hash of the input literals>"
    tag: str

    @property
    def dataset_name(self) -> str:
        return DATASET_PREFIX + self.task_name

    def dataset_id(self) -> identifier_pb2.Identifier:
        """The dataset as flyteidl reports it in CatalogMetadata (resource type DATASET)."""
        return identifier_pb2.Identifier(
            resource_type=identifier_pb2.DATASET, project=self.project, domain=self.domain,
            name=self.dataset_name, version=self.dataset_version,
        )

    def __str__(self) -> str:
        return f"{self.project}/{self.domain}/{self.dataset_name}@{self.dataset_version}:{self.tag}"


def is_cacheable(template: tasks_pb2.TaskTemplate) -> bool:
    """True for `@task(cache=True)`: FlytePropeller's IsCacheable (metadata.discoverable)."""
    return template.metadata.discoverable


def is_cache_serializable(template: tasks_pb2.TaskTemplate) -> bool:
    """True for `@task(cache=True, cache_serialize=True)`: one execution per key computes at a time."""
    return template.metadata.discoverable and template.metadata.cache_serializable


def catalog_key(template: tasks_pb2.TaskTemplate, inputs: literals_pb2.LiteralMap | None) -> CatalogKey:
    """The key of running `template` on `inputs`; InvalidArgument when the task has no cache_version."""
    cache_version = template.metadata.discovery_version.strip(" ")
    if not cache_version:
        raise InvalidArgument(f"task {template.id.name}@{template.id.version} is cached but has no cache_version; "
                              "set cache_version=... on the @task and register it again")
    return CatalogKey(
        project=template.id.project,
        domain=template.id.domain,
        task_name=template.id.name,
        cache_version=cache_version,
        dataset_version=f"{cache_version}-{interface_signature(template.interface)}",
        tag=TAG_PREFIX + hash_literal_map(inputs, template.metadata.cache_ignore_input_vars),
    )


def interface_signature(interface: interface_pb2.TypedInterface) -> str:
    """`<inputs hash>-<outputs hash>`, 8 characters each, of the task's typed interface."""
    inputs = _hash_message(interface.inputs)[:_SIGNATURE_HASH_LENGTH]
    outputs = _hash_message(interface.outputs)[:_SIGNATURE_HASH_LENGTH]
    return f"{inputs}-{outputs}"


def hash_literal_map(inputs: literals_pb2.LiteralMap | None, ignore: Iterable[str] = ()) -> str:
    """The hash of the input literals that count for the cache (FlytePlugins' HashLiteralMap)."""
    ignored = set(ignore)
    counted = literals_pb2.LiteralMap()
    if inputs is not None:
        for name, literal in inputs.literals.items():
            if name not in ignored:
                counted.literals[name].CopyFrom(_hashify(literal))
    return _hash_message(counted)


def _hashify(literal: literals_pb2.Literal) -> literals_pb2.Literal:
    """A copy of the literal in which every part with a `hash` is replaced by that hash alone."""
    if literal.hash:
        return literals_pb2.Literal(hash=literal.hash)
    # As in Flyte, a rebuilt collection or map keeps only its elements (not its own metadata).
    if literal.HasField("collection"):
        out = literals_pb2.Literal()
        out.collection.SetInParent()
        for item in literal.collection.literals:
            out.collection.literals.append(_hashify(item))
        return out
    if literal.HasField("map"):
        out = literals_pb2.Literal()
        out.map.SetInParent()
        for name, item in literal.map.literals.items():
            out.map.literals[name].CopyFrom(_hashify(item))
        return out
    return literal


def _hash_message(msg: Message) -> str:
    canonical = json.dumps(json_format.MessageToDict(msg), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, allow_nan=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
