"""Roles per project and domain: who may read, launch, register and administer where.

Four roles, each allowing what the one before it does and more: `viewer` reads entities, executions, their data
and logs; `launcher` also creates, relaunches, recovers, terminates and archives executions, sets signals and
activates launch plans; `registrar` also registers tasks, workflows and launch plans; `admin` also registers
and updates projects and changes matchable attributes. The configuration grants them (auth.roles) to users,
OAuth2 clients and groups, in projects and domains named by fnmatch patterns. Without grants every signed-in
caller may do everything, as FlyteAdmin's BlanketAuthorization allows.

A call that names no domain (a project's own attributes, GetProject) is read with the permission in any domain
of the project, and changed only with it in every domain. A token minted for a task (an eager workflow, a
task calling the API) is limited to its execution's project, whatever its holder's roles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from fnmatch import fnmatchcase
from typing import TypeVar

from flyteidl.admin import project_pb2
from google.protobuf.message import Message

from flytelite.admin.audit import describe
from flytelite.auth.tokens import Identity
from flytelite.config import DEFAULT_DOMAINS
from flytelite.config.auth import ROLES, AuthConfig, RoleGrant
from flytelite.context import CALLER
from flytelite.errors import PermissionDenied, Unauthenticated

T = TypeVar("T")


class Permission(IntEnum):
    VIEW = 1
    LAUNCH = 2
    REGISTER = 3
    ADMIN = 4

    @property
    def verb(self) -> str:
        return {1: "view", 2: "launch", 3: "register", 4: "administer"}[self.value]

    @property
    def role(self) -> str:
        """The least role that has this permission."""
        return ROLES[self.value - 1]


ROLE_PERMISSION = {role: Permission(i + 1) for i, role in enumerate(ROLES)}

# The permission each RPC needs in the project and domain its request names; SIGNED_IN ones need a valid token
# only (ListProjects then lists the projects the caller may view).
SIGNED_IN = ("GetVersion", "GetDomains", "ListProjects", "UserInfo", "SelectCluster")
_NEEDS = {
    Permission.VIEW: (
        "GetTask", "ListTaskIds", "ListTasks", "GetWorkflow", "ListWorkflowIds", "ListWorkflows", "GetLaunchPlan",
        "GetActiveLaunchPlan", "ListActiveLaunchPlans", "ListLaunchPlanIds", "ListLaunchPlans", "GetExecution",
        "GetExecutionData", "ListExecutions", "GetNodeExecution", "GetDynamicNodeWorkflow", "ListNodeExecutions",
        "ListNodeExecutionsForTask", "GetNodeExecutionData", "GetProject", "GetTaskExecution", "ListTaskExecutions",
        "GetTaskExecutionData", "GetProjectDomainAttributes", "GetProjectAttributes", "GetWorkflowAttributes",
        "ListMatchableAttributes", "ListNamedEntities", "GetNamedEntity", "GetDescriptionEntity",
        "ListDescriptionEntities", "GetExecutionMetrics", "CreateDownloadLink", "CreateDownloadLocation", "GetData",
        "ListSignals",
        # Flyte 2's (flyteidl2 RunService, ActionsService, DataProxyService)
        "GetRunDetails", "WatchRunDetails", "GetActionDetails", "WatchActionDetails", "GetActionData", "ListRuns",
        "WatchRuns", "ListActions", "WatchActions", "WatchGroups", "GetActionDataURIs", "GetActionLogContext",
        "WatchClusterEvents", "WatchForUpdates", "TailLogs"),
    Permission.LAUNCH: (
        "CreateExecution", "RelaunchExecution", "RecoverExecution", "UpdateExecution", "TerminateExecution",
        "UpdateLaunchPlan", "SetSignal", "GetOrCreateSignal", "CreateUploadLocation",
        "CreateRun", "AbortRun", "AbortAction", "SignalEvent", "UploadInputs", "Enqueue", "Abort"),
    Permission.REGISTER: ("CreateTask", "CreateWorkflow", "CreateLaunchPlan", "UpdateNamedEntity"),
    Permission.ADMIN: (
        "RegisterProject", "CreateProject", "UpdateProject", "UpdateProjectDomainAttributes", "DeleteProjectDomainAttributes",
        "UpdateProjectAttributes", "DeleteProjectAttributes", "UpdateWorkflowAttributes", "DeleteWorkflowAttributes",
        "CreateWorkflowEvent", "CreateNodeEvent", "CreateTaskEvent"),
}
RPC_PERMISSION: dict[str, Permission] = {rpc: permission for permission, rpcs in _NEEDS.items() for rpc in rpcs}


def rpc_permission(rpc: str) -> Permission | None:
    """What an RPC needs: None for a signed-in caller; ADMIN for an RPC this table does not know."""
    return None if rpc in SIGNED_IN else RPC_PERMISSION.get(rpc, Permission.ADMIN)


def who(identity: Identity) -> str:
    kind = "client" if identity.kind == "client" else "user"
    return f"{kind} {identity.subject}" + (f" (for a task of project {identity.project})" if identity.project else "")


class Authorizer:
    def __init__(self, config: AuthConfig, domains: Iterable[str] = DEFAULT_DOMAINS):
        self.grants = config.roles
        self.members = config.groups
        self.domains = tuple(domains)

    @property
    def blanket(self) -> bool:
        return not self.grants

    def groups(self, identity: Identity) -> set[str]:
        mine = set(identity.groups)
        if identity.kind == "user":
            mine |= {group for group, members in self.members.items() if identity.subject in members}
        return mine

    def _level(self, identity: Identity, project: str, domain: str, groups: set[str]) -> int:
        if identity.project and project != identity.project:
            return 0
        if self.blanket:
            return Permission.ADMIN
        return max((ROLE_PERMISSION[g.role] for g in self.grants if _holds(g, identity, groups)
                    and any(fnmatchcase(project, p) for p in g.projects)
                    and any(fnmatchcase(domain, d) for d in g.domains)), default=0)

    def allows(self, identity: Identity, permission: Permission, project: str, domain: str) -> bool:
        groups = self.groups(identity)
        if domain:
            return self._level(identity, project, domain, groups) >= permission
        levels = [self._level(identity, project, d, groups) for d in self.domains]
        return (max(levels) if permission == Permission.VIEW else min(levels)) >= permission

    def require(self, identity: Identity, permission: Permission, project: str, domain: str) -> None:
        if self.allows(identity, permission, project, domain):
            return
        if not project:
            raise PermissionDenied(f"{who(identity)} may not {permission.verb} across projects: name a project, "
                                   f"or ask for the {permission.role} role in every project")
        where = f"project {project}" + (f", domain {domain}" if domain else " (every domain)" if permission >
                                        Permission.VIEW else "")
        raise PermissionDenied(f"{who(identity)} lacks the {permission.verb} permission in {where}: it needs the "
                               f"{permission.role} role there (auth.roles)")

    def may_view(self, identity: Identity, project: str) -> bool:
        return self.allows(identity, Permission.VIEW, project, "")

def _holds(grant: RoleGrant, identity: Identity, groups: set[str]) -> bool:
    """Whether a grant names the identity: a user or client by (a pattern of) its name, or one of its groups."""
    names = grant.users if identity.kind == "user" else grant.clients
    return bool(groups & set(grant.groups)) or any(fnmatchcase(identity.subject, p) for p in names)


def request_target(request: object) -> tuple[str, str] | None:
    """The (project, domain) a request names (a GetData's flyte:// URL names them in its path, a GetProject's id
    is the project); None for what is not a parsed request (one over the size limit, which the limits'
    interceptor refuses). ListMatchableAttributes and CreateDownloadLocation name no project: they reach every
    project's attributes and blobs."""
    if not isinstance(request, Message):
        return None
    if isinstance(request, project_pb2.ProjectGetRequest):
        return request.id, ""
    flyte_url = getattr(request, "flyte_url", "")
    if isinstance(flyte_url, str) and flyte_url:
        parts = flyte_url.removeprefix("flyte://").split("/")
        return (parts[1], parts[2]) if len(parts) > 2 and parts[0] == "v1" else ("", "")
    project, domain, _ = describe(request)
    return project, domain


@dataclass(frozen=True)
class Caller:
    """The signed-in caller of the call being served (flytelite.context.CALLER): who executions record as their
    creator, and which projects lists show it."""

    identity: Identity
    authorizer: Authorizer

    @property
    def name(self) -> str:
        return self.identity.subject

    @property
    def client_id(self) -> str:
        return self.identity.client_id

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(self.identity.scopes)

    def may_view(self, project: str) -> bool:
        return self.authorizer.may_view(self.identity, project)

    def allows(self, permission: str, project: str, domain: str) -> bool:
        return self.authorizer.allows(self.identity, Permission[permission.upper()], project, domain)


def serve_as(authorizer: Authorizer, identity: Identity | None, needs: Permission | None,
             target: tuple[str, str] | None, call: Callable[[], T]) -> T:
    """call() as `identity` (CALLER) once its roles give it `needs` in `target` (project, domain); None for
    either skips the check (a call any signed-in caller may make; a request the limits refuse)."""
    if identity is None:
        raise Unauthenticated("this call needs a valid bearer token")
    if needs is not None and target is not None:
        authorizer.require(identity, needs, *target)
    token = CALLER.set(Caller(identity, authorizer))
    try:
        return call()
    finally:
        CALLER.reset(token)
