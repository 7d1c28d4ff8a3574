"""audit_events: who created, terminated, relaunched, recovered, signalled, registered or changed what

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 03:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('audit_events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('identity', sa.String(length=255), nullable=False),
    sa.Column('client_id', sa.String(length=255), nullable=False),
    sa.Column('address', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=False),
    sa.Column('project', sa.String(length=255), nullable=False),
    sa.Column('domain', sa.String(length=255), nullable=False),
    sa.Column('resource', sa.String(length=1024), nullable=False),
    sa.Column('outcome', sa.String(length=32), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_audit_events_at'), 'audit_events', ['at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_audit_events_at'), table_name='audit_events')
    op.drop_table('audit_events')
