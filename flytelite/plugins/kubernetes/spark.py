"""flytekitplugins-spark's `spark` tasks on Kubernetes through Spark's own Kubernetes scheduler, no operator: the
attempt's pod is the Spark driver, as `spark-submit --deploy-mode cluster` would create it. Its image's entrypoint
is given `driver` and spark-submit's arguments (`--master k8s://…`, the task's `sparkConf` and `hadoopConf`, the
application file and the task's command), so it runs spark-submit in client mode on the pod's address, as
Spark's images do; the driver then creates the executor pods (`<pod>-exec-<n>`), owned by its pod, which Spark
deletes when the job ends and Kubernetes when the driver's pod goes (abort, timeout, finalize).

The executors run the same image (its entrypoint given `executor`), with the task's environment, the
configured host mounts and flytelite's labels (so their logs are links of the attempt). The driver reaches the
apiserver at `spark.kubernetes_api` with its service account's token (the execution's service account, else
`spark`, as flyteplugins defaults it): that account needs to create, watch and delete pods, services and
config maps in the namespace. The phase is the driver pod's.
"""

from __future__ import annotations

from flyteidl.core import execution_pb2
from flyteidl.plugins import spark_pb2

from flytelite.context import Context
from flytelite.plugins.kubernetes.informer import PodKey
from flytelite.plugins.kubernetes.plugin import KubernetesPlugin
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.taskspec import custom
from flytelite.plugins.machinery.template import TemplateError

SERVICE_ACCOUNT = "spark"
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount"


class SparkDriverPlugin(KubernetesPlugin):
    id = "spark"
    task_types = ("spark",)
    is_default = False
    kind = "Spark driver pod"
    watch_from_start = False

    def __init__(self, ctx: Context, api=None):
        super().__init__(ctx, api)
        self.spark = ctx.config.spark

    def _pod_manifest(self, tctx: TaskExecutionContext, namespace: str) -> dict:
        try:
            job = custom(tctx.task, spark_pb2.SparkJob)
        except ValueError as e:
            raise TemplateError(str(e)) from None
        if not job.mainApplicationFile:
            raise TemplateError("its Spark job names no mainApplicationFile")
        pod = super()._pod_manifest(tctx, namespace)
        meta, spec = pod["metadata"], pod["spec"]
        name = meta["name"]
        primary = next(c for c in spec["containers"] if c["name"] == meta["annotations"]["primary_container_name"])
        spec["serviceAccountName"] = tctx.spec.service_account or SERVICE_ACCOUNT
        conf = {
            "spark.kubernetes.container.image": primary["image"],
            "spark.kubernetes.container.image.pullPolicy": primary.get("imagePullPolicy", self.cfg.image_pull_policy),
            "spark.kubernetes.authenticate.oauthTokenFile": f"{TOKEN}/token",
            "spark.kubernetes.authenticate.caCertFile": f"{TOKEN}/ca.crt",
            **{f"spark.executorEnv.{e['name']}": e["value"] for e in primary.get("env", []) if "value" in e},
            **{f"spark.kubernetes.executor.label.{k}": v for k, v in meta["labels"].items()},
            **_host_volumes(self.cfg.host_mounts),
            **dict(job.sparkConf),
            **{f"spark.hadoop.{k}": v for k, v in job.hadoopConf.items()},
            # Who the driver is, where its executors go, and which Python they run: not the task's to change.
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.driver.pod.name": name,
            "spark.kubernetes.executor.podNamePrefix": name,
        }
        if job.executorPath:
            conf["spark.pyspark.python"] = conf["spark.pyspark.driver.python"] = job.executorPath
        args = ["driver", "--master", f"k8s://{self.spark.kubernetes_api}", "--name", name]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        if job.mainClass:
            args += ["--class", job.mainClass]
        application = job.mainApplicationFile.removeprefix("local://")
        # The image's entrypoint runs the driver: the task's command goes after the application file.
        primary["args"] = [*args, application, *primary.get("command", []), *primary.get("args", [])]
        primary.pop("command", None)
        primary["env"] = [*primary.get("env", []),
                          {"name": "SPARK_DRIVER_BIND_ADDRESS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        return pod

    def _logs(self, key: PodKey, obj: dict | None = None) -> list[execution_pb2.TaskLog]:
        """The driver's log and each executor's the driver asked for (spark.executor.instances)."""
        executors = 0
        for arg in (_container_args(obj) if obj else []):
            if arg.startswith("spark.executor.instances="):
                executors = int(arg.split("=", 1)[1] or 0)
        return self._pod_logs(key[0], [(key[1], "Spark Driver Logs")] + [
            (f"{key[1]}-exec-{i}", f"Spark Executor {i} Logs") for i in range(1, executors + 1)])


def _container_args(pod: dict) -> list[str]:
    primary = pod["metadata"].get("annotations", {}).get("primary_container_name")
    for c in pod.get("spec", {}).get("containers", []):
        if c.get("name") == primary:
            return c.get("args", [])
    return []


def _host_volumes(paths: list[str]) -> dict[str, str]:
    """Spark's settings that mount these host folders read-only at the same paths in the executors."""
    conf = {}
    for i, path in enumerate(paths):
        prefix = f"spark.kubernetes.executor.volumes.hostPath.flytelite-host-{i}"
        conf.update({f"{prefix}.mount.path": path, f"{prefix}.mount.readOnly": "true",
                     f"{prefix}.options.path": path})
    return conf
