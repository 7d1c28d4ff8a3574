"""SQLAlchemy models: every piece of flytelite's state that is not a blob.

Protobuf messages persist as serialized bytes (`*_pb` columns); the columns
beside them exist only so lists can filter and sort in SQL.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    @classmethod
    def table(cls) -> Table:
        """The model's table, for Core statements that must stay clear of the ORM (no objects to load or
        synchronize): the declarative `__table__` is typed as a mere FromClause."""
        return cls.metadata.tables[cls.__tablename__]


class Project(Base):
    __tablename__ = "projects"
    identifier: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[int] = mapped_column(Integer, default=0)
    labels_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class _Entity:
    """Columns shared by tasks, workflows and launch plans: a versioned, immutable entity."""

    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    version: Mapped[str] = mapped_column(String(255), primary_key=True)
    # Digest of the registered spec: identical re-registration succeeds, different content is refused.
    digest: Mapped[str] = mapped_column(String(64))
    spec_pb: Mapped[bytes] = mapped_column(LargeBinary)
    closure_pb: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Task(_Entity, Base):
    __tablename__ = "tasks"
    task_type: Mapped[str] = mapped_column(String(255), default="")


class Workflow(_Entity, Base):
    __tablename__ = "workflows"


class LaunchPlan(_Entity, Base):
    __tablename__ = "launch_plans"
    workflow_name: Mapped[str] = mapped_column(String(255))
    workflow_version: Mapped[str] = mapped_column(String(255))
    # flyteidl.admin.LaunchPlanState: 0 INACTIVE, 1 ACTIVE.
    state: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    schedule_type: Mapped[str] = mapped_column(String(32), default="")


class NamedEntity(Base):
    """Metadata (description, state) that applies to every version of a named entity."""

    __tablename__ = "named_entities"
    resource_type: Mapped[int] = mapped_column(Integer, primary_key=True)
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[int] = mapped_column(Integer, default=0)


class Execution(Base):
    __tablename__ = "executions"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    launch_plan_name: Mapped[str] = mapped_column(String(255), default="")
    launch_plan_version: Mapped[str] = mapped_column(String(255), default="")
    workflow_name: Mapped[str] = mapped_column(String(255), default="")
    workflow_version: Mapped[str] = mapped_column(String(255), default="")
    task_name: Mapped[str] = mapped_column(String(255), default="")
    phase: Mapped[int] = mapped_column(Integer, default=0)
    mode: Mapped[int] = mapped_column(Integer, default=0)
    # 0 active, 1 archived (flyteidl.admin.ExecutionState).
    state: Mapped[int] = mapped_column(Integer, default=0)
    # Who launched it: its spec's principal (FlyteAdmin's `user` filter field).
    launched_by: Mapped[str] = mapped_column(String(255), default="", index=True)
    spec_pb: Mapped[bytes] = mapped_column(LargeBinary)
    closure_pb: Mapped[bytes] = mapped_column(LargeBinary)
    inputs_uri: Mapped[str] = mapped_column(Text, default="")
    user_inputs_uri: Mapped[str] = mapped_column(Text, default="")
    error_kind: Mapped[str] = mapped_column(String(32), default="")
    # For a child execution started by a launch-plan node: the parent node execution.
    parent_node_execution_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    duration: Mapped[float] = mapped_column(Float, default=0.0)


class ExecutionTag(Base):
    """An execution's labels (key, value) and tags (key, ""), filterable as `execution_tag.key/value`."""

    __tablename__ = "execution_tags"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    execution_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(String(255), default="", index=True)


class NodeExecution(Base):
    __tablename__ = "node_executions"
    __table_args__ = (
        UniqueConstraint("project", "domain", "execution_name", "node_id", name="uq_node_execution"),
        Index("ix_node_executions_parent", "project", "domain", "execution_name", "parent_id"),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(String(255))
    domain: Mapped[str] = mapped_column(String(255))
    execution_name: Mapped[str] = mapped_column(String(255))
    # The node execution's unique id within its execution (nested nodes get generated ids).
    node_id: Mapped[str] = mapped_column(String(512))
    parent_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    phase: Mapped[int] = mapped_column(Integer, default=0)
    input_uri: Mapped[str] = mapped_column(Text, default="")
    closure_pb: Mapped[bytes] = mapped_column(LargeBinary)
    metadata_pb: Mapped[bytes] = mapped_column(LargeBinary)
    # flyteidl.core.CompiledWorkflowClosure of a dynamic node, for GetNodeExecutionData.
    dynamic_workflow_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    duration: Mapped[float] = mapped_column(Float, default=0.0)


class TaskExecution(Base):
    __tablename__ = "task_executions"
    __table_args__ = (
        UniqueConstraint(
            "project", "domain", "execution_name", "node_id", "task_project", "task_domain",
            "task_name", "task_version", "retry_attempt", name="uq_task_execution",
        ),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(String(255))
    domain: Mapped[str] = mapped_column(String(255))
    execution_name: Mapped[str] = mapped_column(String(255))
    node_id: Mapped[str] = mapped_column(String(512))
    task_project: Mapped[str] = mapped_column(String(255))
    task_domain: Mapped[str] = mapped_column(String(255))
    task_name: Mapped[str] = mapped_column(String(255))
    task_version: Mapped[str] = mapped_column(String(255))
    retry_attempt: Mapped[int] = mapped_column(Integer, default=0)
    phase: Mapped[int] = mapped_column(Integer, default=0)
    input_uri: Mapped[str] = mapped_column(Text, default="")
    closure_pb: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    duration: Mapped[float] = mapped_column(Float, default=0.0)


class FlyteWorkflow(Base):
    """The engine's executable workflow: the compiled spec plus its mutable status.

    Admin creates it with the execution (as FlyteAdmin creates the FlyteWorkflow
    resource); propeller alone updates `status_json`. A Flyte 2 run is an engine unit too, driven under the
    same lease: its row has no closure, and its state is in its actions' rows (Action).
    """

    __tablename__ = "flyte_workflows"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    # flyteidl.core.CompiledWorkflowClosure the execution runs.
    closure_pb: Mapped[bytes] = mapped_column(LargeBinary)
    # Execution-level settings the engine needs (JSON): inputs uri, raw output prefix,
    # max parallelism, envs, labels, annotations, interruptible, overwrite_cache, launch plan id ...
    spec_json: Mapped[str] = mapped_column(Text)
    status_json: Mapped[str] = mapped_column(Text, default="{}")
    # Set by TerminateExecution; propeller aborts and clears nothing.
    abort_cause: Mapped[str | None] = mapped_column(Text, nullable=True)
    done: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The engine replica that drives this execution, until the lease expires (propeller/leases.py).
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Replica(Base):
    """A running flytelite process, as it last reported itself (its heartbeat renews its leases)."""

    __tablename__ = "replicas"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    # api, engine or all (`flytelite start --role`).
    role: Mapped[str] = mapped_column(String(16))
    # Where its API answers ("" for an engine-only replica).
    address: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Executions waiting in its engine's work queue at the last heartbeat (0 for an API-only replica).
    queue_depth: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Leader(Base):
    """Which replica holds a named leadership (e.g. "scheduler") until `expires_at` (server/leadership.py).

    `owner` is a replica id, NULL once released; the row itself stays, so claiming is always an UPDATE.
    """

    __tablename__ = "leaders"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # When `owner` took it (renewals keep it).
    acquired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ScheduleProgress(Base):
    """How far the scheduler got with one launch plan version's schedule (Flyte's scheduler snapshot).

    Every slot at or before `last_slot_at` has been handled (launched, found already
    launched, or skipped by the catch-up policy); the scheduler never goes back before it.
    """

    __tablename__ = "schedule_progress"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    version: Mapped[str] = mapped_column(String(255), primary_key=True)
    last_slot_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CatalogArtifact(Base):
    """One cached task result (DataCatalog's artifact and its tag, one to one here).

    The key is DataCatalog's: the dataset (project, domain, "flyte_task-<task name>",
    "<cache_version>-<interface hash>") plus the tag (hash of the input literals). The outputs
    LiteralMap lives in the blob store at `outputs_uri`; see flytelite/catalog.
    """

    __tablename__ = "catalog_artifacts"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    dataset_name: Mapped[str] = mapped_column(String(512), primary_key=True)
    dataset_version: Mapped[str] = mapped_column(String(512), primary_key=True)
    tag: Mapped[str] = mapped_column(String(255), primary_key=True)
    task_name: Mapped[str] = mapped_column(String(512), index=True)
    cache_version: Mapped[str] = mapped_column(String(255))
    artifact_id: Mapped[str] = mapped_column(String(64))
    outputs_uri: Mapped[str] = mapped_column(Text)
    # flyteidl.core.TaskExecutionIdentifier of the attempt that computed the outputs.
    source_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class CatalogReservation(Base):
    """Who computes a cache-serialized key right now (DataCatalog's reservation), until `expires_at`."""

    __tablename__ = "catalog_reservations"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    dataset_name: Mapped[str] = mapped_column(String(512), primary_key=True)
    dataset_version: Mapped[str] = mapped_column(String(512), primary_key=True)
    tag: Mapped[str] = mapped_column(String(255), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(1024))
    # UTC; an owner that stops heartbeating loses the reservation once this passes.
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    heartbeat_seconds: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Signal(Base):
    """A gate node's signal (FlyteAdmin's signal): created by the gate when it starts, set by a user.

    The gate waits until `value_pb` is set; SetSignal type-checks the value against `type_pb`.
    """

    __tablename__ = "signals"
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    execution_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    signal_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    # flyteidl.core.LiteralType the value must have.
    type_pb: Mapped[bytes] = mapped_column(LargeBinary)
    # flyteidl.core.Literal, once set.
    value_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class NotificationOutbox(Base):
    """An e-mail a notification asked for, kept until it is sent (flytelite/notifications).

    Written in the transaction that records the execution's terminal phase, so neither a restart nor an SMTP
    outage loses it. A replica claims a due row (`claimed_by`, `claimed_until`) before sending it; a claim that
    outlives its replica expires and another replica sends the mail.
    """

    __tablename__ = "notification_outbox"
    __table_args__ = (Index("ix_notification_outbox_due", "sent_at", "given_up_at", "next_attempt_at"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    project: Mapped[str] = mapped_column(String(255))
    domain: Mapped[str] = mapped_column(String(255))
    execution_name: Mapped[str] = mapped_column(String(255))
    phase: Mapped[int] = mapped_column(Integer)
    # flyteidl.admin.EmailMessage: sender, recipients, subject and body, templates already filled in.
    message_pb: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str] = mapped_column(Text, default="")
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    given_up_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class MatchableAttribute(Base):
    """A matchable attribute (FlyteAdmin's `resources` table): one MatchingAttributes of one resource type at one
    level, where "" is a wildcard: a project (domain, workflow and launch plan ""), a project and domain, or a
    workflow of a project and domain. The most specific row matching an execution applies (`priority`)."""

    __tablename__ = "matchable_attributes"
    # flyteidl.admin.MatchableResource.
    resource_type: Mapped[int] = mapped_column(Integer, primary_key=True)
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    workflow: Mapped[str] = mapped_column(String(255), primary_key=True)
    launch_plan: Mapped[str] = mapped_column(String(255), primary_key=True)
    priority: Mapped[int] = mapped_column(Integer)
    # flyteidl.admin.MatchingAttributes.
    attributes_pb: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AuditEvent(Base):
    """One call that changed something, or tried to (admin/audit.py): who, from where, what, and how it ended."""

    __tablename__ = "audit_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    # The token's subject and client ("" without authentication, or when the call had no valid token).
    identity: Mapped[str] = mapped_column(String(255))
    client_id: Mapped[str] = mapped_column(String(255))
    address: Mapped[str] = mapped_column(String(255))
    # The RPC (CreateExecution, SetSignal, ...) and what it named.
    action: Mapped[str] = mapped_column(String(64))
    project: Mapped[str] = mapped_column(String(255))
    domain: Mapped[str] = mapped_column(String(255))
    resource: Mapped[str] = mapped_column(String(1024))
    # OK, or the gRPC status code's name, with the error's message.
    outcome: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text)


class DeviceGrant(Base):
    """A device-code sign-in (RFC 8628, auth/device.py) from its request to its answer: pending, then approved
    for a person, or denied; removed once its device took the answer or when it expires."""

    __tablename__ = "device_grants"
    user_code: Mapped[str] = mapped_column(String(16), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(255))
    scopes: Mapped[str] = mapped_column(String(1024))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    # pending, approved or denied; who approved it and their groups (a JSON list).
    outcome: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(String(255))
    groups: Mapped[str] = mapped_column(Text)


class Action(Base):
    """One action of a Flyte 2 run (flyteidl2): the run's root `a0`, a task a parent's process enqueued, or a
    trace recorded as it ended. The run is the engine unit (its FlyteWorkflow row holds the lease); a round
    reads the run's unfinished actions only (runs/executor.py)."""

    __tablename__ = "actions"
    __table_args__ = (
        Index("ix_actions_unfinished", "project", "domain", "run_name", "done"),
        Index("ix_actions_parent", "project", "domain", "run_name", "parent"),
        # Runs (root actions, parent "") of a project and domain, by creation.
        Index("ix_actions_runs", "parent", "project", "domain", "created_at"),
    )
    project: Mapped[str] = mapped_column(String(255), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), primary_key=True)
    run_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    # The enqueuing action's name ("" for a0).
    parent: Mapped[str] = mapped_column(String(255), default="")
    # task, trace or condition.
    kind: Mapped[str] = mapped_column(String(16))
    # The task's (a trace's, a condition's) name and the task's version, and who created the run (its root's
    # only; "" when no one signed in did): what lists of runs and actions filter on.
    task_name: Mapped[str] = mapped_column(String(255), default="", server_default="")
    task_version: Mapped[str] = mapped_column(String(255), default="", server_default="")
    created_by: Mapped[str] = mapped_column(String(255), default="", server_default="")
    # flyteidl2.workflow.ActionSpec: what to run, its inputs, the run's output base and spec.
    spec_pb: Mapped[bytes] = mapped_column(LargeBinary)
    # flyteidl2.common.ActionPhase, and whether it is terminal.
    phase: Mapped[int] = mapped_column(Integer)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    # Attempts started (the current one's number, 1-based; 0 before the first).
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # The engine's state of the current attempt and the records of the ended ones (JSON).
    state_json: Mapped[str] = mapped_column(Text, default="{}")
    # flyteidl2.workflow.ErrorInfo of a failed action.
    error_pb: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # Set by an abort (of the action or its run): the engine stops it and its children.
    abort_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The prefix of the attempt whose outputs are the action's ("" until it succeeded).
    output_uri: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
