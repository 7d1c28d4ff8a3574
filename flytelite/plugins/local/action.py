"""Flyte 2's task actions (the `flyte` SDK's `a0` entrypoint) as processes of the image's interpreter.

The process gets the environment Flyte 2's backend gives an action's container: its run and action names, the
run's output base, the organization, and the API to reach for its children (ActionsService, which
`_U_USE_ACTIONS` selects), this server. A client configuration of the server's user (FLYTECTL_CONFIG,
UCTL_CONFIG) is left out: the SDK would read it instead of the variables. With authentication on, the
attempt's own configuration takes its place: the run's task client (auth/task_clients.py, the same as a Flyte 1
execution's) and the certificate to trust, which the SDK reads in a task as from a mounted config file (and, for
its token requests, from SSL_CERT_FILE: the machine's authorities and this one)."""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from flytelite.idl import error_codes as E
from flytelite.idl.error_kinds import USER
from flytelite.plugins.machinery.core import PluginPhaseInfo, TaskExecutionContext
from flytelite.plugins.machinery.process import Attempt, TaskProcess
from flytelite.plugins.machinery.template import rendered_command
from flytelite.runs.store import run_base

# The `flyte` SDK's task entrypoint (a console script of its package).
ENTRYPOINT = "a0"
# The organization a run belongs to: flytelite has one, named as the open-source backend names its own.
ORG = "local"
_CLIENT_CONFIGS = ("FLYTECTL_CONFIG", "UCTL_CONFIG")


class ActionProcess(TaskProcess):
    id = "flyte2-action"
    # "actor": a task of a reusable environment (flyte.ReusePolicy), run as a plain one (see command).
    task_types = ("python", "actor")

    def refuse(self, tctx: TaskExecutionContext) -> PluginPhaseInfo | None:
        container = tctx.container
        argv0 = (list(container.command) + list(container.args))[0]
        interpreter = self.ctx.config.interpreter_for(container.image)
        if argv0 != ENTRYPOINT:
            return PluginPhaseInfo.failure(
                E.UNSUPPORTED_CONTAINER, f"task {tctx.task.id.name} runs {argv0!r}; flytelite runs Flyte 2 tasks "
                f"whose command is the flyte SDK's {ENTRYPOINT!r}", kind=USER, retryable=False)
        if not os.path.exists(os.path.join(os.path.dirname(interpreter), ENTRYPOINT)):
            return PluginPhaseInfo.failure(
                E.IMAGE_NOT_MAPPED, f"task {tctx.task.id.name} runs in image {container.image!r}, whose interpreter "
                f"{interpreter} has no flyte SDK ({ENTRYPOINT!r} is not beside it): map the image to an environment "
                f"with `flyte` installed in the server's configuration (images: {{{container.image!r}: "
                "/path/to/venv/bin/python}), or install flyte in that one", kind=USER, retryable=False)
        return None

    def command(self, tctx: TaskExecutionContext, attempt: Attempt) -> tuple[list[str], dict[str, str]]:
        if tctx.task.type == "actor":
            log = Path(attempt.log_path)
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a") as out:
                out.write(f"[flytelite] {tctx.task.id.name} is a task of a reusable environment (ReusePolicy): "
                          "flytelite runs it in a process of its own, as a task without one; it reuses no "
                          "replica yet\n")
        bin_dir = os.path.dirname(self.ctx.config.interpreter_for(tctx.container.image))
        argv = rendered_command(tctx)
        argv = [os.path.join(bin_dir, ENTRYPOINT), *argv[1:]]
        env = self.environment(tctx, attempt, bin_dir)
        for name in _CLIENT_CONFIGS:
            env.pop(name, None)
        url = urlsplit(self.ctx.public_url)
        env.update({
            "RUN_NAME": tctx.key[2],
            "ACTION_NAME": tctx.node_id,
            "_U_RUN_BASE": run_base(self.ctx, tctx.key),
            "_U_ORG_NAME": ORG,
            "_U_EP_OVERRIDE": url.netloc,
            "_U_INSECURE": "true" if url.scheme == "http" else "false",
            "_U_USE_ACTIONS": "1",
        })
        if "FLYTE_CREDENTIALS_CLIENT_ID" in env:
            env[_CLIENT_CONFIGS[0]] = self._client_config(attempt, env)
        return argv, env

    def _client_config(self, attempt: Attempt, env: dict[str, str]) -> str:
        """The attempt's client configuration (flyte's keys, as flytekit's), from the credentials flytekit's
        variables name; its path."""
        admin = {"endpoint": f"dns:///{env['_U_EP_OVERRIDE']}", "insecure": env["_U_INSECURE"] == "true",
                 "authType": "ClientSecret", "clientId": env["FLYTE_CREDENTIALS_CLIENT_ID"],
                 "clientSecretLocation": env["FLYTE_CREDENTIALS_CLIENT_SECRET_LOCATION"], "scopes": ["all"]}
        ca = env.get("FLYTE_PLATFORM_CA_CERT_FILE_PATH")
        if ca:
            admin["caCertFilePath"] = ca
            # The SDK asks for its token with httpx, which trusts only SSL_CERT_FILE's authorities.
            env["SSL_CERT_FILE"] = str(self._trusted(Path(ca), Path(attempt.work_dir) / "trusted.pem"))
        path = Path(attempt.work_dir) / "flyte-client.yaml"
        path.write_text(yaml.safe_dump({"admin": admin}))
        return str(path)

    @staticmethod
    def _trusted(ca: Path, path: Path) -> Path:
        """The machine's certificate authorities and `ca` in one file, at `path`."""
        system = ssl.get_default_verify_paths().cafile
        bundle = Path(system).read_bytes() if system and os.path.exists(system) else b""
        path.write_bytes(bundle + b"\n" + ca.read_bytes())
        return path
