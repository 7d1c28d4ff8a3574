"""notification_outbox: e-mails of notifications waiting to be sent

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('notification_outbox',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('project', sa.String(length=255), nullable=False),
    sa.Column('domain', sa.String(length=255), nullable=False),
    sa.Column('execution_name', sa.String(length=255), nullable=False),
    sa.Column('phase', sa.Integer(), nullable=False),
    sa.Column('message_pb', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=False),
    sa.Column('claimed_by', sa.String(length=64), nullable=True),
    sa.Column('claimed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('given_up_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('notification_outbox', schema=None) as batch_op:
        batch_op.create_index('ix_notification_outbox_due', ['sent_at', 'given_up_at', 'next_attempt_at'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('notification_outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_notification_outbox_due')
    op.drop_table('notification_outbox')
