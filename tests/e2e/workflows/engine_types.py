"""Tasks of the compute engines' types, declared without the engines' flytekit plugins (as a client that has them
would serialize them), for the plugins' refusals: an engine the task's environment lacks, a shape larger than any
machine, a config version or a field flyteplugins does not know."""

from flytekit import workflow
from flytekit.core.interface import Interface
from flytekit.core.python_function_task import PythonInstanceTask


class EngineTask(PythonInstanceTask):
    def __init__(self, name: str, task_type: str, custom: dict, version: int = 0):
        super().__init__(name=name, task_config=None, task_type=task_type, task_type_version=version,
                         interface=Interface(outputs={"o0": int}))
        self._custom = custom

    def get_custom(self, settings) -> dict:
        return self._custom

    def execute(self, **kwargs) -> int:
        return 1


needs_dask = EngineTask("needs_dask", "dask", {"workers": {"numberOfWorkers": 1}})
too_large = EngineTask("too_large", "dask", {"workers": {"numberOfWorkers": 1000,
                                                         "resources": {"limits": [{"name": "CPU", "value": "1"}]}}})
future_version = EngineTask("future_version", "ray", {}, version=7)
unknown_field = EngineTask("unknown_field", "spark", {"mainApplicationFile": "local:///x.py", "sparkConfig": {}})


@workflow
def needs_dask_wf() -> int:
    return needs_dask()


@workflow
def too_large_wf() -> int:
    return too_large()


@workflow
def future_version_wf() -> int:
    return future_version()


@workflow
def unknown_field_wf() -> int:
    return unknown_field()
