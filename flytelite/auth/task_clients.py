"""The OAuth2 clients task attempts call the API as: one per execution, acting for the execution's creator.

A task's client id is `<task_client_id>/<project>/<domain>/<execution>`. Its secret is derived from the server's
task client secret (an HMAC), so nothing is stored: for a local process the execution's own secret, for a pod
its namespace's (the Secret every pod of the namespace mounts, as Flyte's flyte-secret-auth). A token for such
a client speaks for the user or client who created the execution and reaches only its project
(auth/roles.py); executions without a creator (schedules) act as the task client itself.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flytelite.auth.keys import write_private


def _no_execution(_project: str, _domain: str, _name: str) -> str | None:
    return None


@dataclass
class TaskClients:
    client_id: str
    secret: str
    # The namespace of a project and domain, when tasks run as pods.
    namespace: Callable[[str, str], str] | None = None
    # The creator of an execution ("" for none), None when there is no such execution; set by the server.
    creator_of: Callable[[str, str, str], str | None] = field(default=_no_execution)

    def client_for(self, project: str, domain: str, execution: str) -> str:
        return f"{self.client_id}/{project}/{domain}/{execution}"

    def execution_secret(self, project: str, domain: str, execution: str) -> str:
        return self._derive(f"execution:{project}/{domain}/{execution}")

    def secret_file(self, folder: Path, project: str, domain: str, execution: str) -> Path:
        """The execution's secret in `folder`/client-secret, which only the server's user reads (written once)."""
        path = folder / "client-secret"
        if not path.exists():
            try:
                write_private(path, self.execution_secret(project, domain, execution).encode())
            except FileExistsError:
                pass  # another attempt of the execution wrote it first
        return path

    def namespace_secret(self, namespace: str) -> str:
        return self._derive(f"namespace:{namespace}")

    def _derive(self, scope: str) -> str:
        return hmac.new(self.secret.encode(), scope.encode(), hashlib.sha256).hexdigest()

    def execution_of(self, client_id: str) -> tuple[str, str, str] | None:
        """(project, domain, execution) of a task's client id; None for any other client."""
        prefix, _, rest = client_id.partition("/")
        parts = rest.split("/")
        if prefix != self.client_id or len(parts) != 3 or not all(parts):
            return None
        return parts[0], parts[1], parts[2]

    def authenticate(self, execution: tuple[str, str, str], candidates: set[str]) -> bool:
        """Whether one of `candidates` is the secret of the execution, or of its namespace's pods."""
        secrets = [self.execution_secret(*execution)]
        if self.namespace is not None:
            secrets.append(self.namespace_secret(self.namespace(execution[0], execution[1])))
        return any(hmac.compare_digest(c.encode(), s.encode()) for c in candidates for s in secrets)
