"""Two real servers for the OpenID Connect tests: a flytelite whose own sign-in is the provider (its users,
groups and an OpenID client), and the flytelite people use, which signs them in through the provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flytelite.auth.secrets import hash_secret
from flytelite.testing import RunningServer, database_url_for, free_port, make_server

USERS = {"alice": "alice's password", "bob": "bob's password"}
RP_CLIENT, RP_SECRET = "flytelite-app", "app secret/with+odd chars"


def openid_pair(folder: Path) -> tuple[RunningServer, RunningServer]:
    """(provider, app), not started. alice is in the provider's group ml-team, which the app makes a viewer of
    flytesnacks; bob is in no group. The app's flytekit config signs in with Pkce; `app.redirect_port` is
    flytekit's callback port."""
    app = make_server(folder / "app")
    users = "".join(f"    {u}: \"{hash_secret(p)}\"\n" for u, p in USERS.items())
    provider = make_server(folder / "idp", f"""auth:
  users:
{users}  groups:
    ml-team: [alice]
  clients:
    {RP_CLIENT}:
      secret_hash: "{hash_secret(RP_SECRET)}"
      redirect_uris: ["{app.url}/oauth2/callback"]
      scopes: [openid, profile]
""")
    app.redirect_port = free_port()
    config = f"""auth:
  openid:
    issuer: {provider.url}
    client_id: {RP_CLIENT}
    client_secret: {json.dumps(RP_SECRET)}
    scopes: [openid, profile]
  public_client:
    redirect_uri: http://localhost:{app.redirect_port}/callback
  roles:
    - role: viewer
      groups: [ml-team]
      projects: [flytesnacks]
"""
    database_url = database_url_for(app.home)
    server_config = folder / "app" / "flytelite.yaml"
    server_config.write_text(config + (f"\ndatabase_url: {json.dumps(database_url)}\n" if database_url else ""))
    app.extra_args = ["--config", str(server_config)]
    return provider, app


@contextmanager
def running_pair(folder: Path) -> Iterator[tuple[RunningServer, RunningServer]]:
    """openid_pair(folder), started, and stopped afterwards."""
    provider, app = openid_pair(folder)
    provider.start()
    try:
        app.start()
        try:
            yield provider, app
        finally:
            app.stop()
    finally:
        provider.stop()
