"""Catalog fixtures: a real SQLite file and blob folder under the test's tmp_path, with a clock tests move."""

from __future__ import annotations

import pytest

from flytelite.catalog import Catalog
from flytelite.config import Config
from flytelite.server.app import build_context
from flytelite.testing import database_url_for
from tests.catalog.helpers import ManualClock


@pytest.fixture
def ctx(tmp_path):
    context = build_context(Config(home=tmp_path / "home", database_url=database_url_for(tmp_path / "home")))
    context.clock = ManualClock()
    yield context
    context.db.dispose()


@pytest.fixture
def catalog(ctx) -> Catalog:
    return Catalog(ctx)


@pytest.fixture
def clock(ctx) -> ManualClock:
    return ctx.clock
