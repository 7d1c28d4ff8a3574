"""Tasks of types flytelite has no plugin of its own for, run by the default plugin as FlytePropeller's pod plugin
runs them: a type of the user's own whose task carries a container (as flytekitplugins-duckdb's `duckdb`), a
`sidecar` task in flytekitplugins-pod's shape (the task in its pod spec's primary container), a task with a pod
template, and a pod with a second container, which a local process cannot run."""

from flytekit import PodTemplate, task, workflow
from flytekit.core.interface import Interface
from flytekit.core.python_function_task import PythonFunctionTask, PythonInstanceTask
from kubernetes.client import V1Container, V1PodSpec


class Shout(PythonInstanceTask):
    def __init__(self, name: str):
        super().__init__(name=name, task_config=None, task_type="flytelite_shout",
                         interface=Interface(inputs={"text": str}, outputs={"o0": str}))

    def execute(self, **kwargs) -> str:
        return kwargs["text"].upper()


shout = Shout(name="shout")


def _pod(*others: V1Container) -> PodTemplate:
    return PodTemplate(primary_container_name="primary",
                       pod_spec=V1PodSpec(containers=[V1Container(name="primary"), *others]))


def in_sidecar(text: str) -> str:
    return f"{text} from the primary container"


# flytekitplugins-pod's Pod(...) tasks: type `sidecar`, version 2, the task in the pod's primary container.
in_sidecar = PythonFunctionTask(task_config=None, task_function=in_sidecar, task_type="sidecar",
                                task_type_version=2, pod_template=_pod())


@task(pod_template=_pod())
def in_pod_template(text: str) -> str:
    return f"{text} with a pod template"


@task(pod_template=_pod(V1Container(name="secondary", image="alpine", command=["sh", "-c", "sleep 1"])))
def beside_a_second_container(text: str) -> str:
    return text


@workflow
def task_types_wf(text: str) -> tuple[str, str, str]:
    return shout(text=text), in_sidecar(text=text), in_pod_template(text=text)


@workflow
def second_container_wf(text: str) -> str:
    return beside_a_second_container(text=text)
