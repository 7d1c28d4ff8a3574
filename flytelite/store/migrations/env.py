"""Alembic environment: runs migrations on the engine flytelite hands over (or the URL given)."""

from typing import cast

from alembic import context
from sqlalchemy import create_engine

from flytelite.store.models import Base

config = context.config
# flytelite's migrations (store/db.py) hand over an engine or set the URL.
engine = config.attributes.get("engine") or create_engine(cast(str, config.get_main_option("sqlalchemy.url")))

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
