"""actions: an index of runs (root actions) by project, domain and creation

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 18:40:00
"""
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_actions_runs', 'actions', ['parent', 'project', 'domain', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_actions_runs', table_name='actions')
