"""replicas and execution leases

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 22:55:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('replicas',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('address', sa.String(length=255), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('flyte_workflows', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_owner', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('flyte_workflows', schema=None) as batch_op:
        batch_op.drop_column('lease_expires_at')
        batch_op.drop_column('lease_owner')
    op.drop_table('replicas')
