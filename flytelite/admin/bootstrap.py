"""Data every fresh flytelite has, as a Flyte sandbox does: project flytesnacks."""

from __future__ import annotations

from flytelite.config import DEFAULT_PROJECT
from flytelite.context import Context
from flytelite.store.models import Project


def ensure_default_project(ctx: Context) -> None:
    with ctx.db.session() as session:
        if session.get(Project, DEFAULT_PROJECT) is None:
            session.add(Project(identifier=DEFAULT_PROJECT, name=DEFAULT_PROJECT,
                                description="Default project", created_at=ctx.clock.now()))
