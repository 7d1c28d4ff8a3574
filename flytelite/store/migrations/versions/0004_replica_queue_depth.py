"""replicas report their work queue's depth

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 13:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('replicas', schema=None) as batch_op:
        batch_op.add_column(sa.Column('queue_depth', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('replicas', schema=None) as batch_op:
        batch_op.drop_column('queue_depth')
