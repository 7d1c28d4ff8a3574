"""Identifier helpers: keys, string forms and constructors for flyteidl ids (pure)."""

from __future__ import annotations

import secrets
import string

from flyteidl.core import identifier_pb2 as idpb

ResourceType = idpb.ResourceType
TASK = idpb.TASK
WORKFLOW = idpb.WORKFLOW
LAUNCH_PLAN = idpb.LAUNCH_PLAN

RESOURCE_NAMES: dict[int, str] = {TASK: "task", WORKFLOW: "workflow", LAUNCH_PLAN: "launch plan"}

# The node ids Flyte's compiler gives every workflow's entry and exit.
START_NODE = "start-node"
END_NODE = "end-node"


def entity_key(ident: idpb.Identifier) -> tuple[str, str, str, str]:
    return (ident.project, ident.domain, ident.name, ident.version)


def describe(ident: idpb.Identifier) -> str:
    kind = RESOURCE_NAMES.get(ident.resource_type, "entity")
    return f"{kind} {ident.project}/{ident.domain}/{ident.name}@{ident.version}"


def describe_execution(ident: idpb.WorkflowExecutionIdentifier) -> str:
    return f"execution {ident.project}/{ident.domain}/{ident.name}"


def identifier(resource_type: idpb.ResourceType, project: str, domain: str, name: str,
               version: str) -> idpb.Identifier:
    return idpb.Identifier(resource_type=resource_type, project=project, domain=domain, name=name, version=version)


def execution_id(project: str, domain: str, name: str) -> idpb.WorkflowExecutionIdentifier:
    return idpb.WorkflowExecutionIdentifier(project=project, domain=domain, name=name)


_LETTERS = string.ascii_lowercase
_ALNUM = string.ascii_lowercase + string.digits


def new_execution_name() -> str:
    """Flyte-style generated name: a letter followed by 19 lowercase letters or digits."""
    # One draw from the system's randomness (a system call per character was a visible cost of a launch);
    # 128 bits against 26 * 36**19 names leaves no measurable bias.
    n = secrets.randbits(128)
    n, first = divmod(n, len(_LETTERS))
    chars = [_LETTERS[first]]
    for _ in range(19):
        n, i = divmod(n, len(_ALNUM))
        chars.append(_ALNUM[i])
    return "".join(chars)
