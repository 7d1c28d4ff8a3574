"""device_grants: device-code sign-ins waiting for a person to approve them

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 07:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('device_grants',
    sa.Column('user_code', sa.String(length=16), nullable=False),
    sa.Column('client_id', sa.String(length=255), nullable=False),
    sa.Column('scopes', sa.String(length=1024), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('subject', sa.String(length=255), nullable=False),
    sa.Column('groups', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('user_code')
    )
    op.create_index(op.f('ix_device_grants_expires_at'), 'device_grants', ['expires_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_device_grants_expires_at'), table_name='device_grants')
    op.drop_table('device_grants')
