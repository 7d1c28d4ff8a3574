"""flytekit in a process of its own, signing in as its config says (Pkce, DeviceFlow): prints the projects
it may see.

Usage: projects_client.py FLYTEKIT_CONFIG
"""

import sys

from flytekit.configuration import Config
from flytekit.remote import FlyteRemote

remote = FlyteRemote(Config.auto(sys.argv[1]), default_project="flytesnacks", default_domain="development")
print("projects:", sorted(p.id for p in remote.client.list_projects().projects), flush=True)
