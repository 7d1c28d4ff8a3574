"""The environment Flyte gives a task attempt, wherever it runs (a local process or a pod).

FlytePropeller's container helper sets the task's own env, the execution's env, and the
FLYTE_INTERNAL_* variables flytekit reads to know which execution and task it runs; flytelite adds the
blob store's settings (S3 endpoint and credentials, as propeller's default env vars carry them) and the
API address for tasks that call it (eager workflows, FlyteRemote in a task), with the task client's
credentials when authentication is on, as a Flyte deployment hands them to tasks (FLYTE_CREDENTIALS_*
env, the secret in a file only the server's user reads, or in a Secret a pod mounts). What a local process needs
besides (the server's own environment, PATH, markers) is the local-process plugin's business.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flytelite.config import LiteralOffloadingConfig
from flytelite.context import Context
from flytelite.plugins.machinery.core import TaskExecutionContext


def flyte_task_env(tctx: TaskExecutionContext, ctx: Context, client_secret_file: str = "") -> dict[str, str]:
    """Variables of one attempt, later ones winning: the blob store's, the task's, the execution's, Flyte's.
    With authentication on, the task calls the API as its execution's client (auth/task_clients.py), whose
    secret it reads from `client_secret_file` (a pod's mounted Secret; default: a file of the execution's that
    local processes read); its value is never in the environment."""
    project, domain, name = tctx.key
    task_id = tctx.task.id
    env = dict(ctx.blobs.task_environment())
    env.update({e.key: e.value for e in tctx.container.env})
    env.update(tctx.spec.envs)
    wf = tctx.spec.workflow.split("/") if tctx.spec.workflow else []
    lp = tctx.spec.launch_plan.split("/") if tctx.spec.launch_plan else []
    env.update({
        "FLYTE_INTERNAL_EXECUTION_ID": name,
        "FLYTE_INTERNAL_EXECUTION_PROJECT": project,
        "FLYTE_INTERNAL_EXECUTION_DOMAIN": domain,
        "FLYTE_INTERNAL_EXECUTION_WORKFLOW": ":".join(wf[:3]) if wf else
        f"{tctx.workflow_id.project}:{tctx.workflow_id.domain}:{tctx.workflow_id.name}",
        "FLYTE_INTERNAL_EXECUTION_LAUNCHPLAN": ":".join(lp[:3]),
        "FLYTE_INTERNAL_TASK_PROJECT": task_id.project,
        "FLYTE_INTERNAL_TASK_DOMAIN": task_id.domain,
        "FLYTE_INTERNAL_TASK_NAME": task_id.name,
        "FLYTE_INTERNAL_TASK_VERSION": task_id.version,
        "FLYTE_ATTEMPT_NUMBER": str(tctx.attempt),
    })
    env.update(literal_offloading_env(ctx.config.literal_offloading))
    # The trace of the launch (the current span), for the task's own instrumentation to continue.
    traceparent = ctx.tracing.traceparent()
    if traceparent:
        env["TRACEPARENT"] = traceparent
    if ctx.public_url:
        env["FLYTE_EXECUTION_URL"] = (f"{ctx.public_url}/console/projects/{project}/domains/{domain}"
                                      f"/executions/{name}/nodeId/{tctx.node_id}/nodes")
        # Tasks that call the API themselves reach this server, unless the task or the execution names another.
        explicit = {e.key for e in tctx.container.env} | set(tctx.spec.envs)
        if "FLYTE_PLATFORM_URL" not in explicit:
            url = urlsplit(ctx.public_url)
            env["FLYTE_PLATFORM_URL"] = url.netloc
            env["FLYTE_PLATFORM_INSECURE"] = "true" if url.scheme == "http" else "false"
            if ctx.config.tls:
                env["FLYTE_PLATFORM_CA_CERT_FILE_PATH"] = ctx.config.tls_ca_file or ctx.config.tls_cert
            env.update(_credentials_env(ctx, tctx.key, explicit, client_secret_file))
    return env


def _credentials_env(ctx: Context, key: tuple[str, str, str], explicit: set[str],
                     client_secret_file: str) -> dict[str, str]:
    """flytekit's client-credentials settings for the execution's task client, unless the task brings its own."""
    auth = ctx.auth
    if auth is None or explicit & {"FLYTE_CREDENTIALS_AUTH_MODE", "FLYTE_CREDENTIALS_CLIENT_ID"}:
        return {}
    if not client_secret_file:
        client_secret_file = str(auth.tasks.secret_file(ctx.config.work_dir / f"{key[0]}-{key[1]}-{key[2]}", *key))
    return {"FLYTE_CREDENTIALS_AUTH_MODE": "ClientSecret", "FLYTE_CREDENTIALS_CLIENT_ID": auth.tasks.client_for(*key),
            "FLYTE_CREDENTIALS_SCOPES": "all", "FLYTE_CREDENTIALS_CLIENT_SECRET_LOCATION": client_secret_file}


def literal_offloading_env(cfg: LiteralOffloadingConfig) -> dict[str, str]:
    """What tells flytekit's entrypoint to offload large outputs itself (flytek8s.GetLiteralOffloadingEnvVars):
    an output of _F_L_MIN_SIZE_MB or more goes to `<output prefix>/<name>_offloaded_metadata.pb`."""
    if not cfg.enabled:
        return {}
    return {"_F_L_MIN_SIZE_MB": str(cfg.min_size_mb), "_F_L_MAX_SIZE_MB": str(cfg.max_size_mb)}
