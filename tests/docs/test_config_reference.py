"""The configuration reference (scripts/docs/config_reference.py, generated when the documentation is built):
every key of the YAML file has a doc, the `# ...` comment above its field, and the page lists every key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "scripts" / "docs" / "config_reference.py"


def _generator():
    spec = importlib.util.spec_from_file_location("config_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_configuration_key_has_a_doc():
    reference = _generator()
    missing = reference.undocumented(reference.config_keys())
    assert missing == [], (
        f"{len(missing)} configuration keys have no doc; write a `# ...` comment directly above each field in "
        "flytelite/config (sections: above the field, or a class docstring):\n  " + "\n  ".join(missing))


def test_the_page_lists_every_key_with_its_type_and_default():
    reference = _generator()
    keys = reference.config_keys()
    page = reference.render(keys)
    paths = {k.path for k in keys}
    # Top-level keys, sections, nested sections and keys of named or listed items.
    assert {"home", "port", "engine", "engine.warm_pool_size", "engine.warm_queue_seconds", "auth.openid.issuer",
            "auth.clients.<name>.secret_hash", "auth.roles[].projects", "agent_service.agents.<name>.endpoint",
            "kubernetes.default_cpu_limit"} <= paths
    for key in keys:
        assert f"`{key.path}`" in page, key.path
    assert "| `engine.workers` | `int` | `8` |" in page
    assert "| `home` | `Path` | `~/.flytelite` |" in page


def test_a_fields_doc_is_the_comment_block_directly_above_it():
    reference = _generator()

    class Sample:
        # Not this one: a blank line follows.

        # The first line
        # and the second.
        documented: int = 1
        bare: str = "x"  # a comment beside a field is not its doc

    docs = reference.field_docs(Sample)
    assert docs == {"documented": "The first line and the second.", "bare": ""}


def test_the_site_generates_the_page_at_build_time():
    mkdocs = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert "scripts/docs/config_reference.py" in mkdocs["hooks"]
    assert not (REPO / "docs" / reference_page()).exists(), "the reference is generated; do not commit a copy"


def reference_page() -> str:
    return _generator().PAGE
