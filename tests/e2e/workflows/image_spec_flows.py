"""Module code guarded by `ImageSpec.is_container()`, as Flyte's deck examples import plotly: inside a
task it sees itself in the task's own image only."""

from flytekit import ImageSpec, task, workflow

image = ImageSpec(name="flytelite-imagespec-test", registry="localhost:30000", packages=["plotly"])
other = ImageSpec(name="flytelite-imagespec-other", registry="localhost:30000", packages=["torch"])

if image.is_container():
    import json as guarded  # stands in for a package only the image has
if other.is_container():
    import colorsys as never  # noqa: F401


@task(container_image=image)
def is_t_inside() -> str:
    return guarded.dumps({"inside": image.is_container(), "other": other.is_container()}, sort_keys=True)


@workflow
def image_spec_wf() -> str:
    return is_t_inside()
