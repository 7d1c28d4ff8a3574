"""flytekit with admin.authType Pkce, in a process of its own (flytekit keeps one PKCE client per endpoint).

Signs in (flytekit opens $BROWSER), then keeps calling the API until the server's log ($1) shows that
flytekit renewed its expired access token with the refresh token; every call must succeed.
Usage: pkce_client.py SERVER_LOG FLYTEKIT_CONFIG
"""

import sys
import time
from pathlib import Path

from flytekit.configuration import Config
from flytekit.remote import FlyteRemote

server_log, config = Path(sys.argv[1]), sys.argv[2]
remote = FlyteRemote(Config.auto(config), default_project="flytesnacks", default_domain="development")
projects = remote.client.list_projects()
print("projects:", [p.id for p in projects.projects], flush=True)
deadline = time.monotonic() + 120
while "by the refresh_token grant" not in server_log.read_text():
    if time.monotonic() > deadline:
        sys.exit("flytekit never refreshed its access token")
    remote.client.list_projects()
    time.sleep(0.2)
remote.client.list_projects()
print("refreshed", flush=True)
