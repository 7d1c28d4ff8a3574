"""matchable_attributes: FlyteAdmin's matchable resources (project, project-domain and workflow attributes)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 20:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('matchable_attributes',
    sa.Column('resource_type', sa.Integer(), nullable=False),
    sa.Column('project', sa.String(length=255), nullable=False),
    sa.Column('domain', sa.String(length=255), nullable=False),
    sa.Column('workflow', sa.String(length=255), nullable=False),
    sa.Column('launch_plan', sa.String(length=255), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('attributes_pb', sa.LargeBinary(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('resource_type', 'project', 'domain', 'workflow', 'launch_plan')
    )


def downgrade() -> None:
    op.drop_table('matchable_attributes')
