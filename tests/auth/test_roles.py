"""Roles per project and domain (auth/roles.py) on a real server: every RPC of the served services over gRPC,
every REST binding, every console page and action and the log routes, called by each role in a project it has
and one it has not; what is refused is PERMISSION_DENIED / 403 naming the permission and the project, what is
allowed is never refused, and nothing of the other project leaks. Then real flytekit clients, the console's
actions, the audit of refused calls, and a task's token limited to its execution's project."""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
from urllib.parse import parse_qs, urlsplit

import grpc
import pytest
import requests
from flyteidl.admin import common_pb2, execution_pb2, project_pb2
from flyteidl.core import identifier_pb2
from flyteidl.service import admin_pb2_grpc
from flytekit.configuration import Config as FlyteConfig
from flytekit.remote import FlyteRemote
from google.protobuf import descriptor, message_factory

from flytelite.admin.audit import AuditLog
from flytelite.admin.grpc_services import GRPC_SERVICES
from flytelite.auth.roles import RPC_PERMISSION, SIGNED_IN, Permission
from flytelite.auth.secrets import hash_secret
from flytelite.auth.task_clients import TaskClients
from flytelite.config import Config
from flytelite.console.app import build_app
from flytelite.console.rest import _repeated, flyte_routes
from flytelite.context import Context
from flytelite.storage import BlobStore
from flytelite.store.db import Database
from flytelite.testing import free_port, make_server
from tests.auth.clients import sign_in_fields
from tests.e2e.flyte_cli import EXECUTION_URL, pyflyte, wait_for

pytestmark = pytest.mark.e2e

ALPHA, BETA, DOMAIN = "alpha", "beta", "development"
PASSWORD = "a long enough password"
BOT, BOT_SECRET = "ops-bot", "ops-bot secret"
ROBOT, ROBOT_SECRET = "ci-robot", "ci-robot secret"
USERS = ("vera", "lara", "ada", "nobody", "dana")
# What each identity may do in each project (every domain, but dana: development only); "" is no project.
LEVELS = {
    "vera": {ALPHA: Permission.VIEW},
    "lara": {ALPHA: Permission.LAUNCH},
    ROBOT: {ALPHA: Permission.REGISTER},
    "ada": {ALPHA: Permission.ADMIN, BETA: Permission.ADMIN, "": Permission.ADMIN},
    "nobody": {},
}
WORKFLOW = """import time

from flytekit import task, workflow


@task
def nap(seconds: int) -> int:
    time.sleep(seconds)
    return seconds


@workflow
def napping(seconds: int = 0) -> int:
    return nap(seconds=seconds)
"""


def _config(redirect_port: int) -> str:
    users = "".join(f"    {u}: \"{hash_secret(PASSWORD)}\"\n" for u in USERS)
    return f"""auth:
  access_token_seconds: 3600
  public_client:
    redirect_uri: http://localhost:{redirect_port}/callback
  clients:
    {BOT}:
      secret_hash: "{hash_secret(BOT_SECRET)}"
    {ROBOT}:
      secret_hash: "{hash_secret(ROBOT_SECRET)}"
  users:
{users}  groups:
    platform: [ada]
  roles:
    - role: viewer
      users: [vera]
      projects: [{ALPHA}]
    - role: launcher
      users: [lara]
      projects: [{ALPHA}]
    - role: launcher
      users: [dana]
      projects: [{ALPHA}]
      domains: [{DOMAIN}]
    - role: registrar
      clients: [{ROBOT}]
      projects: [{ALPHA}]
    - role: admin
      groups: [platform]
    - role: admin
      clients: [{BOT}]
"""


def _user_token(server, user: str) -> str:
    """An access token for `user` by the authorization-code flow with PKCE (the sign-in form, then the code)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    redirect = server.redirect_uri
    params = {"client_id": "flytectl", "response_type": "code", "redirect_uri": redirect, "scope": "all offline",
              "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"}
    form = requests.get(f"{server.url}/oauth2/authorize", params=params, timeout=30)
    signed = requests.post(f"{server.url}/oauth2/authorize", timeout=30, allow_redirects=False,
                           data={**sign_in_fields(form.text), "username": user, "password": PASSWORD})
    assert signed.status_code == 303, signed.text
    code = parse_qs(urlsplit(signed.headers["location"]).query)["code"][0]
    answer = requests.post(f"{server.url}/oauth2/token", timeout=30, data={
        "grant_type": "authorization_code", "client_id": "flytectl", "code": code, "redirect_uri": redirect,
        "code_verifier": verifier})
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


def _client_token(server, client: str, secret: str) -> str:
    answer = requests.post(f"{server.url}/oauth2/token", data={"grant_type": "client_credentials"},
                           auth=(client, secret), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


def _token_config(server, path, token: str):
    """A flytekit config whose ExternalCommand prints `token` (flytekit then calls as its holder)."""
    command = [sys.executable, "-c", f"print({token!r})"]
    lines = "".join(f"    - {c!r}\n" for c in command)
    path.write_text(server.admin_config(f"  authType: ExternalCommand\n  command:\n{lines}"))
    return path


def _fill(msg, project: str, depth: int = 0) -> None:
    """Name `project`, DOMAIN and "x" for every identifier a request holds, a few messages deep."""
    if msg.DESCRIPTOR.full_name == "flyteidl.admin.Project":
        msg.id = msg.name = project
        return
    for field in msg.DESCRIPTOR.fields:
        if _repeated(field):
            continue
        if field.type == descriptor.FieldDescriptor.TYPE_STRING:
            value = {"project": project, "id": project, "domain": DOMAIN, "name": "x", "version": "v", "node_id": "n0",
                     "signal_id": "s", "flyte_url": f"flyte://v1/{project}/{DOMAIN}/x/n0/i"}.get(field.name)
            if value is not None:
                setattr(msg, field.name, value)
        elif field.type == descriptor.FieldDescriptor.TYPE_MESSAGE and depth < 4 \
                and not field.message_type.full_name.startswith("google.protobuf."):
            _fill(getattr(msg, field.name), project, depth + 1)


def _allowed(who: str, needs: Permission | None, project: str) -> bool:
    return needs is None or LEVELS[who].get(project, LEVELS[who].get("", 0)) >= needs


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """The server, a token per identity, and a finished execution in each project (run by the admin bot)."""
    folder = tmp_path_factory.mktemp("roles")
    port = free_port()
    server = make_server(folder, _config(port))
    server.redirect_uri = f"http://localhost:{port}/callback"
    server.start()
    try:
        tokens = {u: _user_token(server, u) for u in USERS}
        tokens[ROBOT] = _client_token(server, ROBOT, ROBOT_SECRET)
        tokens[BOT] = _client_token(server, BOT, BOT_SECRET)
        with grpc.insecure_channel(server.endpoint) as channel:
            admin = admin_pb2_grpc.AdminServiceStub(channel)
            for project in (ALPHA, BETA):
                admin.RegisterProject(project_pb2.ProjectRegisterRequest(
                    project=project_pb2.Project(id=project, name=project)), timeout=30,
                    metadata=[("flyte-authorization", f"Bearer {tokens[BOT]}")])
        secret = folder / "bot-secret"
        secret.write_text(BOT_SECRET)
        server.config_path = folder / "bot.yaml"
        server.config_path.write_text(server.admin_config(f"  authType: ClientSecret\n  clientId: {BOT}\n"
                                                          f"  clientSecretLocation: {secret}\n"))
        code = folder / "wf"
        code.mkdir()
        (code / "napping.py").write_text(WORKFLOW)
        runs = {}
        for project in (ALPHA, BETA):
            proc = pyflyte(server, "run", "--remote", "--project", project, "--domain", DOMAIN, "napping.py",
                           "napping", cwd=code)
            runs[project] = EXECUTION_URL.search(proc.stdout + proc.stderr).group(3)
        for project, name in runs.items():
            remote = FlyteRemote(FlyteConfig.auto(str(server.config_path)), default_project=project,
                                 default_domain=DOMAIN)
            ex = remote.wait(remote.fetch_execution(name=name), timeout=240)
            assert ex.closure.phase == 4, ex.error  # SUCCEEDED
        server.tokens, server.runs, server.code = tokens, runs, code
        yield server
    finally:
        if getattr(server, "channel", None) is not None:
            server.channel.close()
        server.stop()


def _grpc(server, token: str, service, method, request):
    """(status code, details) of one call of `method` with `token`."""
    if getattr(server, "channel", None) is None:
        server.channel = grpc.insecure_channel(server.endpoint)
    stub = server.channel.unary_unary(f"/{service.full_name}/{method.name}",
                                      request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=lambda b: b)
    try:
        stub(request, timeout=30, metadata=[("flyte-authorization", f"Bearer {token}")])
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""


def test_every_rpc_has_a_permission():
    served = {m.name for s in GRPC_SERVICES for m in s.descriptor.methods}
    assert served - set(RPC_PERMISSION) - set(SIGNED_IN) == set()


def test_every_rpc_is_refused_or_served_by_role(team):
    wrong = []
    for who in LEVELS:
        for service in GRPC_SERVICES:
            for method in service.descriptor.methods:
                needs = None if method.name in SIGNED_IN else RPC_PERMISSION[method.name]
                for project in (ALPHA, BETA):
                    request = message_factory.GetMessageClass(method.input_type)()
                    _fill(request, project)
                    code, details = _grpc(team, team.tokens[who], service.descriptor, method, request)
                    named = project if project.encode() in request.SerializeToString() else ""
                    allowed = _allowed(who, needs, named)
                    if allowed and code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
                                            grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
                        wrong.append(f"{who} {method.name} {project}: {code.name} {details}")
                    if not allowed and (code != grpc.StatusCode.PERMISSION_DENIED or needs.verb not in details
                                        or (f"project {named}" if named else "across projects") not in details):
                        wrong.append(f"{who} {method.name} {project}: {code.name} {details}")
    assert wrong == [], "\n".join(wrong)


def _rest_url(route, project: str) -> tuple[str, str]:
    """The route's URL with its fields filled, and the project it names ("" when its path names none)."""
    values = {"project": project, "domain": DOMAIN, "name": "x", "version": "v", "node_id": "n0",
              "resource_type": "1", "retry_attempt": "0", "signal_id": "s"}
    named = ""
    path = route.template
    for field in route.fields:
        leaf = field.rsplit(".", 1)[-1]
        value = values.get(leaf, "x")
        named = project if leaf == "project" else named
        path = path.replace("{" + field + "}", value)
    return path, named


def test_every_rest_route_is_refused_or_served_by_role(team):
    wrong = []
    for who in LEVELS:
        headers = {"Authorization": f"Bearer {team.tokens[who]}"}
        for route in flyte_routes():
            needs = None if route.rpc in SIGNED_IN else RPC_PERMISSION[route.rpc]
            for project in (ALPHA, BETA):
                path, named = _rest_url(route, project)
                resp = requests.request(route.method, team.url + path, headers=headers, timeout=30,
                                        json={} if route.method != "GET" else None)
                allowed = _allowed(who, needs, named)
                if allowed != (resp.status_code != 403) or resp.status_code in (401, 500):
                    wrong.append(f"{who} {route.method} {path}: {resp.status_code} {resp.text[:200]}")
    assert wrong == [], "\n".join(wrong)


def _console_urls(server, project: str) -> list[tuple[str, str, Permission | None, str]]:
    """(method, url, permission needed, project it needs it in) of every console page, action and log route
    of the server's route table."""
    config = Config.load(None, home=server.home)
    ctx = Context(config=config, db=Database(config.db_url), blobs=BlobStore(config.blob_root))
    try:
        app = build_app(ctx)
    finally:
        ctx.db.dispose()
    values = {"project": project, "domain": DOMAIN, "name": server.runs[project], "kind": "workflows",
              "singular": "workflow", "version": "v", "path": f"{project}-{DOMAIN}-{server.runs[project]}/n0-0.log",
              "node": "n0", "index:int": "0"}
    urls = []
    for route in app.routes:
        path = getattr(route, "path", "")
        if not path.startswith(("/console", "/logs")) or path.startswith("/console/static") or "{rest" in path:
            continue
        if path == "/console/audit":
            urls.append(("GET", path, Permission.ADMIN, ""))
        elif path.startswith("/console/api/"):
            urls.append(("POST", path, Permission.LAUNCH, project))
        elif "{project}" in path or path.startswith("/logs"):
            for name, value in values.items():
                path = path.replace("{" + name + (":path}" if name == "path" else "}"), value)
            urls.append(("GET", path, Permission.VIEW, project))
        else:
            urls.append(("GET", path, None, ""))
    return urls


def test_every_console_page_action_and_log_is_refused_or_served_by_role(team):
    wrong, seen = [], set()
    for who in LEVELS:
        headers = {"Authorization": f"Bearer {team.tokens[who]}"}
        for project in (ALPHA, BETA):
            for method, url, needs, named in _console_urls(team, project):
                seen.add(url)
                body = {"project": project, "domain": DOMAIN, "name": "x", "version": "v"}
                resp = requests.request(method, team.url + url, headers=headers, timeout=30,
                                        json=body if method == "POST" else None)
                allowed = _allowed(who, needs, named)
                if allowed != (resp.status_code != 403) or resp.status_code in (401, 500):
                    wrong.append(f"{who} {method} {url}: {resp.status_code} {resp.text[:200]}")
                if not allowed and team.runs[BETA] in resp.text and project == BETA and "/logs" not in url:
                    wrong.append(f"{who} {url} shows beta's execution")
    assert wrong == [], "\n".join(wrong)
    assert any(u.startswith("/logs/") for u in seen) and "/console/audit" in seen


def test_lists_show_only_projects_one_may_view(team):
    with grpc.insecure_channel(team.endpoint) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        for who, expected in (("vera", {ALPHA}), ("nobody", set()), ("ada", {ALPHA, BETA})):
            listed = admin.ListProjects(project_pb2.ProjectListRequest(), timeout=30,
                                        metadata=[("flyte-authorization", f"Bearer {team.tokens[who]}")])
            assert {p.id for p in listed.projects} - {"flytesnacks"} == expected, who
    page = requests.get(f"{team.url}/console", headers={"Authorization": f"Bearer {team.tokens['vera']}"},
                        timeout=30)
    assert page.status_code == 200 and f"/console/projects/{ALPHA}" in page.text
    assert f"/console/projects/{BETA}" not in page.text


def test_domains_narrow_a_grant(team):
    """dana launches in alpha's development only; alpha's project-wide changes need every domain."""
    headers = [("flyte-authorization", f"Bearer {team.tokens['dana']}")]
    with grpc.insecure_channel(team.endpoint) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        lp = identifier_pb2.Identifier(resource_type=identifier_pb2.LAUNCH_PLAN, project=ALPHA, domain="staging",
                                       name="napping", version="v")
        for domain, code in (("staging", grpc.StatusCode.PERMISSION_DENIED), (DOMAIN, grpc.StatusCode.NOT_FOUND)):
            lp.domain = domain
            with pytest.raises(grpc.RpcError) as err:
                admin.CreateExecution(execution_pb2.ExecutionCreateRequest(
                    project=ALPHA, domain=domain, spec=execution_pb2.ExecutionSpec(launch_plan=lp)),
                    timeout=30, metadata=headers)
            assert err.value.code() == code, err.value.details()
        assert "domain staging" in _grpc(team, team.tokens["dana"], *_method("ListExecutions"),
                                         _list_request(ALPHA, "staging"))[1]


def _method(name: str):
    for service in GRPC_SERVICES:
        for method in service.descriptor.methods:
            if method.name == name:
                return service.descriptor, method
    raise KeyError(name)


def _list_request(project: str, domain: str):
    return common_pb2.ResourceListRequest(id=common_pb2.NamedEntityIdentifier(project=project, domain=domain),
                                          limit=10)


def test_flytekit_clients_of_each_role(team, tmp_path):
    """A viewer reads alpha's execution with FlyteRemote and may not launch; a launcher relaunches it and is
    recorded as its creator; the registrar registers into alpha and not beta."""
    viewer = FlyteRemote(FlyteConfig.auto(str(_token_config(team, tmp_path / "v.yaml", team.tokens["vera"]))),
                         default_project=ALPHA, default_domain=DOMAIN)
    ex = viewer.fetch_execution(name=team.runs[ALPHA])
    assert ex.outputs["o0"] == 0
    lp = viewer.fetch_launch_plan(name="napping.napping", version=ex.spec.launch_plan.version)
    with pytest.raises(Exception, match="lacks the launch permission in project alpha"):
        viewer.execute(lp, inputs={"seconds": 0})
    with pytest.raises(Exception, match="project beta"):
        viewer.fetch_execution(project=BETA, name=team.runs[BETA])

    launcher = FlyteRemote(FlyteConfig.auto(str(_token_config(team, tmp_path / "l.yaml", team.tokens["lara"]))),
                           default_project=ALPHA, default_domain=DOMAIN)
    run = launcher.execute(lp, inputs={"seconds": 0})
    assert launcher.wait(run, timeout=240).closure.phase == 4
    assert launcher.fetch_execution(name=run.id.name).spec.metadata.principal == "lara"

    team_config = team.config_path
    team.config_path = _token_config(team, tmp_path / "r.yaml", team.tokens[ROBOT])
    try:
        for project, ok in ((ALPHA, True), (BETA, False)):
            proc = pyflyte(team, "register", "--non-fast", "--project", project, "--domain", DOMAIN, "--version", "r1",
                           "napping.py", cwd=team.code, check=False)
            assert (proc.returncode == 0) == ok, proc.stdout + proc.stderr
            if not ok:
                assert "lacks the register permission in project beta" in proc.stdout + proc.stderr
    finally:
        team.config_path = team_config


def test_the_console_shows_only_the_actions_one_may_take(team):
    page = f"{team.url}/console/projects/{ALPHA}/domains/{DOMAIN}/executions/{team.runs[ALPHA]}"
    wf = f"{team.url}/console/projects/{ALPHA}/domains/{DOMAIN}/workflow/napping.napping"
    for who, shown in (("vera", False), ("lara", True)):
        headers = {"Authorization": f"Bearer {team.tokens[who]}"}
        html = requests.get(page, headers=headers, timeout=30).text
        assert ("data-relaunch" in html) == shown, who
        assert ("<form class='launch'" in requests.get(wf, headers=headers, timeout=30).text) == shown, who


def test_only_mine_lists_the_executions_the_signed_in_user_launched(team):
    listing = f"{team.url}/console/projects/{ALPHA}/executions?domain={DOMAIN}"

    def names(who: str, query: str) -> str:
        resp = requests.get(listing + query, headers={"Authorization": f"Bearer {team.tokens[who]}"}, timeout=30)
        assert resp.status_code == 200 and "notice bad" not in resp.text, resp.text[-500:]
        return resp.text

    assert team.runs[ALPHA] in names(BOT, "&mine=1")  # the bot launched the fixture's runs
    assert team.runs[ALPHA] not in names("lara", "&mine=1")
    assert team.runs[ALPHA] in names("lara", f"&launched_by={BOT}")
    assert "name='mine'" in names("lara", "")


def test_refused_calls_are_audited(team):
    """Refused for want of a role (over gRPC) and for want of a token (over REST): both recorded."""
    no_token = requests.delete(f"{team.url}/api/v1/executions/{BETA}/{DOMAIN}/{team.runs[BETA]}",
                               json={"cause": "audit me"}, timeout=30)
    assert no_token.status_code == 401 and no_token.headers["WWW-Authenticate"].startswith("Bearer")
    with grpc.insecure_channel(team.endpoint) as channel, pytest.raises(grpc.RpcError):
        admin_pb2_grpc.AdminServiceStub(channel).TerminateExecution(
            execution_pb2.ExecutionTerminateRequest(id=identifier_pb2.WorkflowExecutionIdentifier(
                project=BETA, domain=DOMAIN, name=team.runs[BETA]), cause="audit me"),
            timeout=30, metadata=[("flyte-authorization", f"Bearer {team.tokens['vera']}")])
    config = Config.load(None, home=team.home)
    ctx = Context(config=config, db=Database(config.db_url), blobs=BlobStore(config.blob_root))
    try:
        events = [e for e in AuditLog(ctx).events(project=BETA) if e.action == "TerminateExecution"
                  and e.identity == "vera"]
        anonymous = [e for e in AuditLog(ctx).events(project=BETA) if e.action == "TerminateExecution"
                     and e.identity == ""]
    finally:
        ctx.db.dispose()
    assert events and events[0].outcome == "PERMISSION_DENIED" and events[0].resource == team.runs[BETA]
    assert "lacks the launch permission in project beta" in events[0].message
    assert anonymous and anonymous[0].outcome == "UNAUTHENTICATED" and anonymous[0].resource == team.runs[BETA]
    assert "needs a bearer token" in anonymous[0].message


def test_a_tasks_token_reaches_only_its_executions_project(team):
    """The token a task of an alpha execution gets acts for the execution's creator (the admin bot), and only in
    alpha; once the execution ends, no more tokens are issued for it."""
    proc = pyflyte(team, "run", "--remote", "--project", ALPHA, "--domain", DOMAIN, "napping.py", "napping",
                   "--seconds", "600", cwd=team.code)
    name = EXECUTION_URL.search(proc.stdout + proc.stderr).group(3)
    tasks = TaskClients("flytepropeller", (team.home / "auth" / "task-client-secret").read_text().strip())
    client = tasks.client_for(ALPHA, DOMAIN, name)
    assert requests.post(f"{team.url}/oauth2/token", data={"grant_type": "client_credentials"}, timeout=30,
                         auth=(client, "wrong")).status_code == 401
    token = _client_token(team, client, tasks.execution_secret(ALPHA, DOMAIN, name))
    assert _grpc(team, token, *_method("ListExecutions"), _list_request(ALPHA, DOMAIN))[0] == grpc.StatusCode.OK
    code, details = _grpc(team, token, *_method("ListExecutions"), _list_request(BETA, DOMAIN))
    assert code == grpc.StatusCode.PERMISSION_DENIED and f"client {BOT} (for a task of project alpha)" in details
    with grpc.insecure_channel(team.endpoint) as channel:
        admin_pb2_grpc.AdminServiceStub(channel).TerminateExecution(
            execution_pb2.ExecutionTerminateRequest(id=identifier_pb2.WorkflowExecutionIdentifier(
                project=ALPHA, domain=DOMAIN, name=name), cause="done"),
            timeout=30, metadata=[("flyte-authorization", f"Bearer {token}")])
    remote = FlyteRemote(FlyteConfig.auto(str(team.config_path)), default_project=ALPHA, default_domain=DOMAIN)
    wait_for(lambda: remote.fetch_execution(name=name).closure.phase == 7, "the execution to abort", 120)
    assert requests.post(f"{team.url}/oauth2/token", data={"grant_type": "client_credentials"}, timeout=30,
                         auth=(client, tasks.execution_secret(ALPHA, DOMAIN, name))).status_code == 401
