"""The policy of auth/roles.py on its own: roles, patterns, groups, calls that name no domain, task tokens."""

from __future__ import annotations

import pytest

from flytelite.auth.roles import Authorizer, Permission
from flytelite.auth.tokens import Identity
from flytelite.config.auth import AuthConfig
from flytelite.errors import PermissionDenied


def _user(name: str, groups: tuple[str, ...] = (), project: str = "") -> Identity:
    return Identity(subject=name, client_id="flytectl", scopes=("all",), kind="user", groups=groups, project=project)


def _client(name: str) -> Identity:
    return Identity(subject=name, client_id=name, scopes=("all",), kind="client")


POLICY = Authorizer(AuthConfig(enabled=True, groups={"data": ["dora"]}, roles=[
    {"role": "viewer", "users": ["*"], "projects": ["public-*"]},
    {"role": "launcher", "users": ["lee"], "projects": ["ml"], "domains": ["development"]},
    {"role": "registrar", "clients": ["ci"], "projects": ["ml", "etl"]},
    {"role": "admin", "groups": ["data", "sso-admins"], "projects": ["etl"]},
]))


@pytest.mark.parametrize("identity, permission, project, domain, allowed", [
    (_user("anyone"), Permission.VIEW, "public-docs", "production", True),
    (_user("anyone"), Permission.LAUNCH, "public-docs", "production", False),
    (_user("anyone"), Permission.VIEW, "ml", "development", False),
    (_user("lee"), Permission.LAUNCH, "ml", "development", True),
    (_user("lee"), Permission.VIEW, "ml", "development", True),  # a role has what the roles below it have
    (_user("lee"), Permission.LAUNCH, "ml", "production", False),
    (_user("lee"), Permission.VIEW, "ml", "", True),  # read what names no domain: any domain will do
    (_user("lee"), Permission.LAUNCH, "ml", "", False),  # change it: every domain is needed
    (_client("ci"), Permission.REGISTER, "etl", "staging", True),
    (_client("ci"), Permission.ADMIN, "etl", "staging", False),
    (_user("ci"), Permission.VIEW, "etl", "staging", False),  # a user named like a client is not the client
    (_user("dora"), Permission.ADMIN, "etl", "", True),  # the configured group
    (_user("sam", groups=("sso-admins",)), Permission.ADMIN, "etl", "production", True),  # the token's groups
    (_user("sam", groups=("sso-admins",)), Permission.VIEW, "ml", "production", False),
    (_client("dora"), Permission.VIEW, "etl", "production", False),  # configured groups hold users
    (_user("dora", project="ml"), Permission.VIEW, "etl", "production", False),  # a task's token: its project only
])
def test_what_each_grant_allows(identity, permission, project, domain, allowed):
    assert POLICY.allows(identity, permission, project, domain) == allowed


def test_without_grants_every_caller_may_do_everything_but_a_task_stays_in_its_project():
    blanket = Authorizer(AuthConfig(enabled=True))
    assert blanket.allows(_user("x"), Permission.ADMIN, "any", "")
    assert not blanket.allows(_user("x", project="a"), Permission.VIEW, "b", "development")


def test_a_refusal_names_the_permission_the_place_and_the_role_that_would_allow_it():
    with pytest.raises(PermissionDenied, match="user lee lacks the launch permission in project ml, domain "
                                               "production: it needs the launcher role there"):
        POLICY.require(_user("lee"), Permission.LAUNCH, "ml", "production")
    with pytest.raises(PermissionDenied, match="may not view across projects"):
        POLICY.require(_user("lee"), Permission.VIEW, "", "")


@pytest.mark.parametrize("grant, message", [
    ({"role": "owner", "users": ["a"]}, "role must be one of viewer, launcher, registrar, admin"),
    ({"role": "viewer"}, "names no users, clients or groups"),
    ({"role": "viewer", "users": "a"}, "users of the viewer grant must be a list"),
])
def test_bad_grants_are_refused_naming_the_problem(grant, message):
    with pytest.raises(ValueError, match=message):
        AuthConfig(enabled=True, roles=[grant])
