"""flytesnacks' ray_plugin example (without its ImageSpec, and with environment variables as its runtime
environment where the example installs numpy and pandas with pip)."""

import os

import ray
from flytekit import Resources, task, workflow
from flytekitplugins.ray import HeadNodeConfig, RayJobConfig, WorkerNodeConfig


@ray.remote
def f(x):
    return x * x


ray_config = RayJobConfig(
    head_node_config=HeadNodeConfig(ray_start_params={"log-color": "True"}),
    worker_node_config=[WorkerNodeConfig(group_name="ray-group", replicas=1)],
    runtime_env={"env_vars": {"FLYTELITE_PROBE": "seen"}},
    enable_autoscaling=True,
    shutdown_after_job_finishes=True,
    ttl_seconds_after_finished=3600,
)


@task(task_config=ray_config, requests=Resources(mem="2Gi", cpu="2"))
def ray_task(n: int) -> list[int]:
    futures = [f.remote(i) for i in range(n)]
    return ray.get(futures)


@workflow
def ray_workflow(n: int) -> list[int]:
    return ray_task(n=n)


@task(task_config=RayJobConfig(worker_node_config=[WorkerNodeConfig(group_name="ray-group", replicas=2)],
                               runtime_env={"env_vars": {"FLYTELITE_PROBE": "seen"}}))
def ray_nodes() -> str:
    ray.get(f.remote(1))
    alive = [n for n in ray.nodes() if n["Alive"]]
    return f"{len(alive)} {os.environ.get('FLYTELITE_PROBE')}"


@workflow
def nodes_wf() -> str:
    return ray_nodes()


@task
def ray_inside(n: int) -> int:
    """An ordinary task that starts Ray itself, as modin does: Ray's sockets go under RAY_TMPDIR."""
    ray.init()
    try:
        return sum(ray.get([f.remote(i) for i in range(n)]))
    finally:
        ray.shutdown()


@workflow
def ray_inside_wf(n: int) -> int:
    return ray_inside(n=n)
