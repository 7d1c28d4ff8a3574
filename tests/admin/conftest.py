"""Fixtures of the admin API tests."""

import pytest

from tests.admin.harness import start_admin


@pytest.fixture
def admin(tmp_path):
    yield from start_admin(tmp_path)
