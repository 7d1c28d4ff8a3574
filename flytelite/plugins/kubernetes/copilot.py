"""A raw container's data as pods get it: FlytePropeller's co-pilot (flytek8s/copilot.go AddCoPilotToPod).

A raw container (flytekit's ContainerTask) knows nothing of Flyte: it reads its inputs as files from
its input folder (/var/inputs) and leaves its outputs as files in its output folder (/var/outputs).
Each folder is an emptyDir volume of the pod. An init container, "downloader", lays the inputs out
before the task's container starts; a container started just before it, "sidecar", waits for the
task's container to end and uploads what it left (copilot_main.py is their program). FlytePropeller makes
the sidecar a native sidecar, which Kubernetes ends with a signal when the task's container ends;
clusters before 1.28 have none, so, as co-pilot did before, the pod shares one process namespace and
the sidecar watches the task's processes, started first and holding the task's container back with its
postStart hook until it watches. Such a pod is done when all its containers are (phases.py).
"""

from __future__ import annotations

import base64

from flyteidl.core import tasks_pb2

from flytelite.config import KubernetesConfig
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.plugins.machinery.template import TemplateError

DOWNLOADER, UPLOADER = "downloader", "sidecar"
INPUTS_VOLUME, OUTPUTS_VOLUME = "flyte-inputs", "flyte-outputs"
READY_FILE = "/tmp/flytelite-copilot-ready"
FORMATS = {tasks_pb2.DataLoadingConfig.JSON: "json", tasks_pb2.DataLoadingConfig.YAML: "yaml",
           tasks_pb2.DataLoadingConfig.PROTO: "proto"}
# What the helpers ask of a node: little; they copy files.
RESOURCES = {"requests": {"cpu": "10m", "memory": "64Mi"}}


def uses_copilot(task: tasks_pb2.TaskTemplate) -> bool:
    return task.HasField("container") and task.container.data_config.enabled


def add_copilot(spec: dict, primary: dict, tctx: TaskExecutionContext, cfg: KubernetesConfig, env: list[dict],
                store_root: str) -> None:
    """Add the input and output volumes to the task's container and the helpers that fill and read them."""
    task = tctx.task
    image = cfg.copilot_image or cfg.images.get("default")
    if not image:
        raise TemplateError(f"raw container task {task.id.name} reads its inputs from files and leaves its "
                            "outputs as files, which a helper container with flytelite installed handles: set "
                            "kubernetes.copilot_image in the server config to such an image")
    dc = task.container.data_config
    input_path, output_path = dc.input_path or "/var/inputs", dc.output_path or "/var/outputs"
    helper = {"image": image, "imagePullPolicy": cfg.image_pull_policy, "env": env, "resources": RESOURCES,
              "terminationMessagePolicy": "FallbackToLogsOnError"}
    volumes = spec.setdefault("volumes", [])
    if len(task.interface.inputs.variables):
        volumes.append({"name": INPUTS_VOLUME, "emptyDir": {}})
        mount = {"name": INPUTS_VOLUME, "mountPath": input_path}
        primary.setdefault("volumeMounts", []).append(mount)
        spec.setdefault("initContainers", []).append({
            **helper, "name": DOWNLOADER, "volumeMounts": [dict(mount)],
            "command": cfg.copilot_command + [
                "download", "--store", store_root, "--inputs", tctx.input_uri, "--to", input_path,
                "--format", FORMATS.get(dc.format, "json")]})
    if len(task.interface.outputs.variables):
        volumes.append({"name": OUTPUTS_VOLUME, "emptyDir": {}})
        mount = {"name": OUTPUTS_VOLUME, "mountPath": output_path}
        primary.setdefault("volumeMounts", []).append(mount)
        interface = base64.b64encode(task.interface.outputs.SerializeToString()).decode()
        uploader = {
            **helper, "name": UPLOADER, "volumeMounts": [dict(mount)],
            "command": cfg.copilot_command + [
                "upload", "--store", store_root, "--from-dir", output_path, "--output-prefix", tctx.output_prefix,
                "--raw-output-prefix", tctx.raw_output_prefix, "--interface", interface, "--ready-file", READY_FILE],
            "lifecycle": {"postStart": {"exec": {"command": cfg.copilot_command + ["ready", "--file", READY_FILE]}}},
        }
        # The kubelet starts containers in this order: the uploader, then the task's (any others after).
        spec["containers"] = [uploader, primary] + [c for c in spec["containers"] if c is not primary]
        spec["shareProcessNamespace"] = True


def waits_for_whole_pod(pod: dict) -> bool:
    """Is the attempt done only when every container is (an uploader still reading the outputs)?"""
    return any(c.get("name") == UPLOADER for c in pod["spec"].get("containers", []))
