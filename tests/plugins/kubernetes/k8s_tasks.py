"""flytekit tasks whose pods the pod-building tests look at (never run)."""

from flytekit import ContainerTask, PodTemplate, Resources, Secret, kwtypes, task, workflow
from kubernetes.client import V1Container, V1PodSpec, V1Toleration


@task(requests=Resources(cpu="250m", mem="300Mi"), limits=Resources(gpu="1"), interruptible=True,
      secret_requests=[Secret(group="db", key="password", mount_requirement=Secret.MountType.ENV_VAR),
                       Secret(group="tls", key="cert", mount_requirement=Secret.MountType.FILE)])
def shaped(x: int) -> int:
    return x


@task(pod_template=PodTemplate(
    primary_container_name="main",
    pod_spec=V1PodSpec(containers=[V1Container(name="main")],
                       tolerations=[V1Toleration(key="dedicated", value="ml", effect="NoSchedule")]),
    labels={"team": "ml"}))
def templated(x: int) -> int:
    return x


@task(pod_template_name="base")
def named_template(x: int) -> int:
    return x


raw = ContainerTask(
    name="raw", image="example.org/tools:1", input_data_dir="/in", output_data_dir="/out",
    inputs=kwtypes(x=int), outputs=kwtypes(y=int),
    command=["sh", "-c", "echo $(( {{.inputs.x}} + 1 )) > /out/y"])


@workflow
def shapes(x: int) -> int:
    return raw(x=named_template(x=templated(x=shaped(x=x))))
