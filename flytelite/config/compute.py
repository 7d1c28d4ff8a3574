"""The `spark:`, `ray:` and `dask:` blocks of flytelite's configuration: where the compute plugins run their task
types when they run on this machine (plugins: {<type>: local}, the default). Left empty, a plugin starts the
engine for each attempt with the shape the task asks for and tears it down after; set, every attempt joins the
cluster named (a team's shared cluster), which flytelite neither starts nor stops. On Kubernetes
(plugins: {<type>: kubernetes}) the operators start the engines, and Spark's driver pod its executors."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SparkConfig:
    # A Spark master to submit to (spark://host:7077); empty: local[<cores>] in the task's own JVM, with as
    # many cores as the task's executors ask for (spark.executor.instances x spark.executor.cores).
    master: str = ""
    # The apiserver as a Spark driver pod reaches it, for spark tasks on Kubernetes (Spark's in-cluster default).
    kubernetes_api: str = "https://kubernetes.default.svc"


@dataclass
class RayConfig:
    # A running Ray cluster's dashboard (http://host:8265), where jobs are submitted; empty: a head and the
    # task's worker groups started for each attempt.
    address: str = ""


@dataclass
class DaskConfig:
    # A running Dask scheduler (tcp://host:8786); empty: a scheduler and the task's workers started for
    # each attempt.
    scheduler_address: str = ""
