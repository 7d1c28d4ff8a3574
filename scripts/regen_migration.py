"""Regenerate the initial Alembic migration from store/models.py (only while no schema has shipped)."""

import pathlib
import tempfile

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

MIGRATIONS = pathlib.Path(__file__).resolve().parent.parent / "flytelite" / "store" / "migrations"

for old in (MIGRATIONS / "versions").glob("0001_*.py"):
    old.unlink()
with tempfile.TemporaryDirectory() as tmp:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = create_engine(f"sqlite:///{tmp}/gen.db")
    command.revision(cfg, message="initial schema", autogenerate=True, rev_id="0001")
