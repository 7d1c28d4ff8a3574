"""A worker's clean-up between attempts (plugins/warm/child.py) while another thread imports: flytekit's event
loop thread lives on between attempts, and an attempt's end is reported before its clean-up runs, so a
clean-up that fails there loses the next attempt handed to the worker (seen in flytekit's remote suite)."""

from __future__ import annotations

import os
import sys

from flytelite.propeller.plugins.warm import child


def test_forgetting_finders_survives_an_import_in_another_thread(monkeypatch, tmp_path):
    site = os.path.join(os.path.realpath(sys.prefix), "lib")  # inside the interpreter's installation
    cache = {str(tmp_path / "task-code"): None, site: None}
    monkeypatch.setattr(sys, "path_importer_cache", cache)
    installed = child._installed

    def stats_while_another_thread_imports(path):
        cache[str(tmp_path / f"imported-meanwhile-{len(cache)}")] = None  # what a concurrent import adds
        return installed(path)

    monkeypatch.setattr(child, "_installed", stats_while_another_thread_imports)
    child._forget_finders()
    assert str(tmp_path / "task-code") not in cache and site in cache
