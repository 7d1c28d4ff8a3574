"""actions: what lists of runs and actions filter on (task name and version, creator), and an index of runs
(root actions) by project, domain and creation

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 18:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('actions') as batch_op:
        batch_op.add_column(sa.Column('task_name', sa.String(length=255), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('task_version', sa.String(length=255), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('created_by', sa.String(length=255), nullable=False, server_default=''))
    op.create_index('ix_actions_runs', 'actions', ['parent', 'project', 'domain', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_actions_runs', table_name='actions')
    with op.batch_alter_table('actions') as batch_op:
        batch_op.drop_column('created_by')
        batch_op.drop_column('task_version')
        batch_op.drop_column('task_name')
