"""actions: Flyte 2 runs' actions

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07 15:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('actions',
    sa.Column('project', sa.String(length=255), nullable=False),
    sa.Column('domain', sa.String(length=255), nullable=False),
    sa.Column('run_name', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('parent', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('spec_pb', sa.LargeBinary(), nullable=False),
    sa.Column('phase', sa.Integer(), nullable=False),
    sa.Column('done', sa.Boolean(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('state_json', sa.Text(), nullable=False),
    sa.Column('error_pb', sa.LargeBinary(), nullable=True),
    sa.Column('abort_reason', sa.Text(), nullable=True),
    sa.Column('output_uri', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('project', 'domain', 'run_name', 'name')
    )
    op.create_index('ix_actions_unfinished', 'actions', ['project', 'domain', 'run_name', 'done'], unique=False)
    op.create_index('ix_actions_parent', 'actions', ['project', 'domain', 'run_name', 'parent'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_actions_parent', table_name='actions')
    op.drop_index('ix_actions_unfinished', table_name='actions')
    op.drop_table('actions')
