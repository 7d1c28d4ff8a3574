"""Shared pieces of the catalog tests: real flytekit task templates, literals, a clock tests move,
and the worker functions that separate processes run against one SQLite file."""

from __future__ import annotations

import time
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated

from flyteidl.core import literals_pb2, tasks_pb2
from flytekit import HashMethod, task
from flytekit.configuration import Image, ImageConfig, SerializationSettings
from flytekit.core.context_manager import FlyteContextManager
from flytekit.core.type_engine import TypeEngine
from flytekit.tools.translator import get_serializable

from flytelite.catalog import Catalog, CatalogKey
from flytelite.config import Config
from flytelite.context import Context
from flytelite.idl.times import Clock
from flytelite.storage import BlobStore
from flytelite.store.db import Database
from flytelite.testing import database_url_for

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


class ManualClock(Clock):
    """A clock that stands still until a test moves it."""

    def __init__(self, now: datetime = T0):
        self.current = now

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


def _label_hash(value: str) -> str:
    # Stands in for an expensive content hash: only the first word counts.
    return "label:" + value.split()[0]


Label = Annotated[str, HashMethod(_label_hash)]


@task(cache=True, cache_version="1.0", cache_serialize=True, cache_ignore_input_vars=("seed",))
def square(x: int, seed: int, label: Label) -> int:
    return x * x


@task(cache=True, cache_version="2.0")
def square_v2(x: int, seed: int, label: Label) -> int:
    return x * x


@task(cache=True, cache_version="1.0")
def square_renamed_output(x: int, seed: int, label: Label) -> tuple[int, int]:
    return x * x, x


@task
def uncached(x: int) -> int:
    return x


def template(entity=square, version: str = "v1", project: str = "flytesnacks",
             domain: str = "development") -> tasks_pb2.TaskTemplate:
    """The TaskTemplate flytekit registers for `entity` (as `pyflyte register` would send it)."""
    settings = SerializationSettings(
        image_config=ImageConfig(default_image=Image(name="default", fqn="img", tag="t")),
        project=project, domain=domain, version=version,
    )
    return get_serializable(OrderedDict(), settings, entity).template.to_flyte_idl()


def inputs(x: int = 3, seed: int = 7, label: str = "alpha one") -> literals_pb2.LiteralMap:
    """The inputs.pb flytekit writes for square(x, seed, label)."""
    ctx = FlyteContextManager.current_context()
    lm = TypeEngine.dict_to_literal_map(ctx, {"x": x, "seed": seed, "label": label},
                                        {"x": int, "seed": int, "label": Label})
    return lm.to_flyte_idl()


def int_outputs(value: int, name: str = "o0") -> literals_pb2.LiteralMap:
    lm = literals_pb2.LiteralMap()
    lm.literals[name].scalar.primitive.integer = value
    return lm


def open_catalog(home: Path, clock: Clock | None = None) -> Catalog:
    """A catalog on the state under `home` (already migrated), as a second process would open it."""
    config = Config(home=home, database_url=database_url_for(home))
    ctx = Context(config=config, db=Database(config.db_url), blobs=BlobStore(config.blob_root))
    if clock is not None:
        ctx.clock = clock
    return Catalog(ctx)


# -- run in separate processes (multiprocessing spawn) ---------------------------------------

def reserve_once(home: str, key: CatalogKey, owner: str, start_at: float) -> tuple[str, bool]:
    """Wait until `start_at`, then ask once for the reservation; returns (holder, acquired)."""
    catalog = open_catalog(Path(home))
    time.sleep(max(0.0, start_at - time.time()))
    r = catalog.get_or_extend_reservation(key, owner, heartbeat_interval=5)
    catalog.db.dispose()
    return r.owner_id, r.acquired


def compute_serialized(home: str, key: CatalogKey, owner: str, value: int, start_at: float) -> tuple[str, int]:
    """What a cache-serialized node does: use a hit, else compute under the reservation, else wait.

    Returns ("computed" | "hit", the output value the node ends up with).
    """
    catalog = open_catalog(Path(home))
    time.sleep(max(0.0, start_at - time.time()))
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            hit = catalog.get(key)
            if hit is not None:
                return "hit", hit.outputs.literals["o0"].scalar.primitive.integer
            r = catalog.get_or_extend_reservation(key, owner, heartbeat_interval=5)
            if r.acquired:
                # The previous owner may have put and released between our look and our acquire.
                hit = catalog.get(key)
                if hit is not None:
                    catalog.release_reservation(key, owner)
                    return "hit", hit.outputs.literals["o0"].scalar.primitive.integer
                time.sleep(0.3)  # the "task" runs while the others wait
                catalog.put(key, int_outputs(value))
                catalog.release_reservation(key, owner)
                return "computed", value
            time.sleep(0.02)
        raise TimeoutError(f"{owner} waited a minute for {key}")
    finally:
        catalog.db.dispose()


def key_in_subprocess(version: str) -> CatalogKey:
    from flytelite.catalog import catalog_key

    return catalog_key(template(version=version), inputs())
