"""executions: who launched each (FlyteAdmin's `user` filter field), filled in from each execution's spec

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-08 03:00:00
"""
from alembic import op
import sqlalchemy as sa
from flyteidl.admin import execution_pb2


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table('executions') as batch_op:
        batch_op.add_column(sa.Column('launched_by', sa.String(length=255), nullable=False, server_default=''))
    op.create_index('ix_executions_launched_by', 'executions', ['launched_by'], unique=False)
    executions = sa.table('executions', sa.column('project', sa.String), sa.column('domain', sa.String),
                          sa.column('name', sa.String), sa.column('spec_pb', sa.LargeBinary),
                          sa.column('launched_by', sa.String))
    key = (executions.c.project, executions.c.domain, executions.c.name)
    bind = op.get_bind()
    last = None
    while True:
        # A batch at a time, in key order, so a large table is never read whole.
        query = sa.select(*key, executions.c.spec_pb).order_by(*key).limit(BATCH)
        if last is not None:
            query = query.where(sa.tuple_(*key) > sa.tuple_(*last))
        rows = bind.execute(query).all()
        if not rows:
            break
        for project, domain, name, spec_pb in rows:
            principal = execution_pb2.ExecutionSpec.FromString(spec_pb).metadata.principal
            if principal:
                bind.execute(executions.update().where(
                    executions.c.project == project, executions.c.domain == domain, executions.c.name == name
                ).values(launched_by=principal[:255]))
        last = rows[-1][:3]


def downgrade() -> None:
    op.drop_index('ix_executions_launched_by', table_name='executions')
    with op.batch_alter_table('executions') as batch_op:
        batch_op.drop_column('launched_by')
