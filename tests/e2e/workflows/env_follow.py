"""Tasks that import packages installed into their task environment while the server runs."""

import os

from flytekit import task, workflow


def _parent() -> str:
    """What started this task's process: the zygote (warm) or pyflyte-fast-execute (cold)."""
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        cmdline = f.read().replace(b"\0", b" ").decode()
    return "zygote" if "zygote.py" in cmdline else "fast-execute" if "pyflyte-fast-execute" in cmdline else cmdline


@task
def ef_editable() -> str:
    import ef_probe  # on sys.path through the .pth file its (editable-style) install put in site-packages

    return f"{ef_probe.VALUE} via {_parent()}"


@task
def ef_lazy() -> str:
    # flytekit hashes cache keys with joblib, a module it looks up once, when flytekit.core.local_cache is imported.
    from flytekit.core.local_cache import _calculate_cache_key
    from flytekit.models.literals import LiteralMap

    return f"{_calculate_cache_key('ef', '1', LiteralMap({}))} via {_parent()}"


@workflow
def ef_editable_wf() -> str:
    return ef_editable()


@workflow
def ef_lazy_wf() -> str:
    return ef_lazy()
