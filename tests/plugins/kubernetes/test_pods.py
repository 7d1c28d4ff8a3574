"""The pod of a task attempt (plugins/kubernetes/pods.py, names.py), built from real flytekit tasks."""

from __future__ import annotations

import pytest

from flytelite.config import KubernetesConfig
from flytelite.plugins.kubernetes import names, pods
from flytelite.plugins.machinery.core import TaskExecutionContext
from flytelite.store.flyteworkflow import ExecutionSpec
from tests.plugins.kubernetes import k8s_tasks as kt
from tests.propeller import harness as h

KEY = ("flytesnacks", "development", "abc123")


@pytest.fixture(scope="module")
def tasks():
    closure = h.compile_entity(kt.shapes)
    return {t.template.id.name.rsplit(".", 1)[-1]: t.template for t in closure.tasks}


def _tctx(task, attempt=0, node_id="n0", **spec):
    spec = ExecutionSpec(project=KEY[0], domain=KEY[1], name=KEY[2], inputs_uri="s3://b/in/inputs.pb",
                         raw_output_prefix="s3://b/raw", workflow="flytesnacks/development/wf.shapes/v1", **spec)
    return TaskExecutionContext(ctx=None, key=KEY, spec=spec, workflow_id=None, node_id=node_id, attempt=attempt,
                                task=task, input_uri="s3://b/in/inputs.pb", output_prefix="s3://b/out/0",
                                state={}, wake=lambda _d: None)


def _render(words):
    return [w.replace("{{.input}}", "s3://b/in/inputs.pb") for w in words]


def _env(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_names_are_flytepropellers():
    assert names.pod_name(KEY, "n0", 1) == "abc123-n0-1"
    long = names.pod_name(("p", "d", "a" * 40), "n1-0-dn3", 0)
    assert long.startswith("f") and len(long) == 8  # "f" + base32 of the FNV-1a hash
    assert names.pod_name(("p", "d", "a" * 40), "n1-0-dn3", 0) == long
    assert names.pod_name(KEY, "My_Node", 0) == "abc123-my-node-0"
    assert names.namespace("{{ project }}-{{ domain }}", "flytesnacks", "development") == "flytesnacks-development"
    assert names.fixed_length_id(["xx"], 1) == "flfryc2i"  # FlytePropeller's own test vector


def test_the_primary_container_runs_the_task_as_flytepropeller_renders_it(tasks):
    task = tasks["shaped"]
    cfg = KubernetesConfig(images={task.container.image: "localhost/task:v1"},
                           interruptible_tolerations=[{"key": "spot", "operator": "Exists"}],
                           interruptible_node_selector={"pool": "spot"}, env={"EXTRA": "1"})
    pod = pods.build_pod(_tctx(task, attempt=2, service_account="runner"), cfg, _render,
                         {"FLYTE_INTERNAL_EXECUTION_ID": KEY[2]}, "flytesnacks-development")
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "abc123-n0-2" and meta["namespace"] == "flytesnacks-development"
    assert meta["labels"]["execution-id"] == "abc123" and meta["labels"]["node-id"] == "n0"
    assert meta["labels"]["interruptible"] == "true" and meta["labels"]["flytelite.io/attempt"] == "2"
    assert meta["labels"]["inject-flyte-secrets"] == "true"
    assert meta["annotations"]["primary_container_name"] == "primary"
    (primary,) = spec["containers"]
    assert "command" not in primary  # flytekit puts the whole command in args, as FlytePropeller passes it
    assert primary["args"][0] == "pyflyte-execute"
    assert "{{.input}}" not in " ".join(primary["args"]) and "s3://b/in/inputs.pb" in primary["args"]
    assert primary["image"] == "localhost/task:v1"
    resources = primary["resources"]
    assert resources["requests"] == {"cpu": "250m", "memory": "300Mi", "nvidia.com/gpu": "1"}
    assert resources["limits"] == {"cpu": "250m", "memory": "300Mi", "nvidia.com/gpu": "1"}
    env = _env(primary)
    assert env["FLYTE_INTERNAL_EXECUTION_ID"] == KEY[2] and env["EXTRA"] == "1"
    assert env["_FSEC_DB_PASSWORD"] == {"secretKeyRef": {"name": "db", "key": "password", "optional": True}}
    assert env["FLYTE_SECRETS_DEFAULT_DIR"] == "/etc/flyte/secrets"
    mount = next(m for m in primary["volumeMounts"] if m["mountPath"] == "/etc/flyte/secrets/tls")
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "tls" and volume["secret"]["items"] == [{"key": "cert", "path": "cert"}]
    assert spec["restartPolicy"] == "Never" and spec["serviceAccountName"] == "runner"
    assert spec["tolerations"] == [{"key": "spot", "operator": "Exists"}] and spec["nodeSelector"] == {"pool": "spot"}


def test_defaults_fill_missing_requests_and_limits(tasks):
    cfg = KubernetesConfig(default_cpu="250m", default_memory="1Gi")
    pod = pods.build_pod(_tctx(tasks["named_template"]), cfg, _render, {}, "ns")
    resources = pod["spec"]["containers"][0]["resources"]
    # No CPU named: the default request and no CPU limit (the pod may use idle cores); memory as Flyte.
    assert resources == {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    assert "tolerations" not in pod["spec"]
    cfg.default_cpu_limit = "2"
    pod = pods.build_pod(_tctx(tasks["named_template"]), cfg, _render, {}, "ns")
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2", "memory": "1Gi"}


def test_a_tasks_pod_template_and_a_named_template_merge_as_in_flyte(tasks):
    base = {"metadata": {"labels": {"from-template": "yes"}},
            "spec": {"containers": [{"name": "default", "env": [{"name": "FROM_DEFAULT", "value": "1"}]},
                                    {"name": "primary", "securityContext": {"runAsUser": 1000}}],
                     "tolerations": [{"key": "base", "operator": "Exists"}]}}
    pod = pods.build_pod(_tctx(tasks["templated"]), KubernetesConfig(), _render, {"A": "1"}, "ns", base)
    spec = pod["spec"]
    (main,) = spec["containers"]
    assert main["name"] == "main" and pod["metadata"]["annotations"]["primary_container_name"] == "main"
    env = _env(main)
    assert env["FROM_DEFAULT"] == "1" and env["A"] == "1"
    assert "s3://b/in/inputs.pb" in main["args"]  # the pod template's own command is rendered too
    assert main["securityContext"] == {"runAsUser": 1000}  # the template's primary container
    assert [t["key"] for t in spec["tolerations"]] == ["base", "dedicated"]  # lists append, the task's last
    assert pod["metadata"]["labels"]["from-template"] == "yes" and pod["metadata"]["labels"]["team"] == "ml"


def test_host_mounts_reach_every_container(tasks):
    pod = pods.build_pod(_tctx(tasks["named_template"]), KubernetesConfig(), _render, {}, "ns",
                         host_mounts=["/srv/venv/", "/srv/venv", "/data"])
    assert [v["hostPath"]["path"] for v in pod["spec"]["volumes"]] == ["/srv/venv", "/data"]
    assert [m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]] == ["/srv/venv", "/data"]


def test_a_raw_container_gets_flytes_copilot_helpers(tasks):
    """Inputs laid out by an init container, outputs read by a container watching the task's processes."""
    cfg = KubernetesConfig(images={"default": "localhost/task:1"}, copilot_command=["copilot"])
    pod = pods.build_pod(_tctx(tasks["raw"]), cfg, _render, {"A": "1"}, "ns", host_mounts=["/srv/venv"],
                         store_root="s3://b")
    spec = pod["spec"]
    assert [c["name"] for c in spec["containers"]] == ["sidecar", "primary"]  # the watcher starts first
    assert spec["shareProcessNamespace"] is True
    (downloader,) = spec["initContainers"]
    uploader, main = spec["containers"]
    assert main["image"] == "localhost/task:1" and downloader["image"] == uploader["image"] == "localhost/task:1"
    assert main["command"] == ["sh", "-c", "echo $(( {{.inputs.x}} + 1 )) > /out/y"]
    assert downloader["command"] == ["copilot", "download", "--store", "s3://b", "--inputs", "s3://b/in/inputs.pb",
                                     "--to", "/in", "--format", "json"]
    assert uploader["command"][:2] == ["copilot", "upload"]
    args = dict(zip(uploader["command"][2::2], uploader["command"][3::2], strict=True))
    assert args["--from-dir"] == "/out" and args["--output-prefix"] == "s3://b/out/0"
    assert uploader["lifecycle"]["postStart"]["exec"]["command"] == ["copilot", "ready", "--file",
                                                                     args["--ready-file"]]
    mounts = {c["name"]: [m["mountPath"] for m in c["volumeMounts"]] for c in [downloader, uploader, main]}
    assert mounts == {"downloader": ["/in", "/srv/venv"], "sidecar": ["/out", "/srv/venv"],
                      "primary": ["/in", "/out", "/srv/venv"]}
    assert _env(downloader)["A"] == _env(uploader)["A"] == "1"


def test_a_raw_container_without_a_helper_image_is_refused_naming_the_setting(tasks):
    from flytelite.plugins.machinery.template import TemplateError

    with pytest.raises(TemplateError, match="kubernetes.copilot_image"):
        pods.build_pod(_tctx(tasks["raw"]), KubernetesConfig(), _render, {}, "ns")
