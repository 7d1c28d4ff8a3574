"""The configuration reference (the site's reference/configuration.md), generated from the config dataclasses.

Every key of flytelite's YAML file is a field of `flytelite.config.Config` or of a section's dataclass under it.
This walks them with `dataclasses.fields` and writes each key's dotted path, type, default and doc. A field's
doc is the block of `# ...` comments directly above it in its class's source, read with `inspect.getsource`,
`ast` and `tokenize`, wherever the class is defined.

As an MkDocs hook (mkdocs.yml `hooks:`), it adds the page to the site at build time, so it is never stale;
`python scripts/docs/config_reference.py` prints it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = "reference/configuration.md"


@dataclass
class Key:
    """One configuration key: a leaf (a value) or a section (a dataclass of keys of its own)."""

    path: str
    type: str
    default: str
    doc: str
    section: bool = False
    # The section's class docstring (sections only).
    about: str = ""
    # The path of the section the key is in ("" for the file's top level).
    parent: str = ""


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the `# ...` comment block directly above the field in the class's source."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and tok.line.strip().startswith("#"):
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    docs = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            lines = []
            line = stmt.lineno - 1
            while line in comments:
                lines.insert(0, comments[line])
                line -= 1
            docs[stmt.target.id] = " ".join(lines)
    return docs


def _type_name(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " | ".join("None" if a is type(None) else _type_name(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    return str(hint)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _render(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "required"
    if isinstance(value, Path):
        # The home folder as the user writes it, not this machine's.
        home = str(Path.home())
        text = str(value)
        return "~" + text[len(home):] if text == home or text.startswith(home + "/") else text
    return json.dumps(value)


def _docstring(cls: type) -> str:
    """The class's own docstring; "" when it has none (a dataclass then documents itself with its signature)."""
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(f"{cls.__name__}(") else inspect.cleandoc(doc)


def _dataclass_of(hint: Any) -> tuple[type | None, str]:
    """The dataclass a field's type holds and how its keys nest: "" (the field itself), ".<name>" (a dict of
    them by name), "[]" (a list of them); None when the field is a plain value."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return typing.cast(type, hint), ""
    if origin in (typing.Union, types.UnionType) and len(args) == 1 and dataclasses.is_dataclass(args[0]):
        return args[0], ""
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return args[1], ".<name>"
    if origin is list and len(args) == 1 and dataclasses.is_dataclass(args[0]):
        return args[0], "[]"
    return None, ""


def walk(cls: type, prefix: str = "", section: str = "") -> list[Key]:
    """Every key of `cls` (the section at path `section`) and of the sections under it, in their fields' order."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    keys = []
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        hint = hints[f.name]
        inner, nesting = _dataclass_of(hint)
        default = _default(f)
        if inner is None:
            keys.append(Key(path, _type_name(hint), _render(default), docs.get(f.name, ""), parent=section))
            continue
        shown = "none (off)" if default is None else "see below" if nesting == "" else _render(default)
        keys.append(Key(path, _type_name(hint), shown, docs.get(f.name, ""), section=True,
                        about=_docstring(inner), parent=section))
        keys.extend(walk(inner, path + nesting + ".", path))
    return keys


def config_keys() -> list[Key]:
    from flytelite.config import Config

    return walk(Config)


def undocumented(keys: list[Key]) -> list[str]:
    """Keys with no doc: a leaf without a comment, a section with neither a comment nor a class docstring."""
    return [k.path for k in keys if not (k.doc or (k.section and k.about))]


def _prose(text: str) -> str:
    """Comment text as Markdown: `<home>` and the like outside code spans shown as written, not taken for HTML."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    # Backticks inside a default would end the code span; none of the defaults has them today.
    return f"`{text}`" if "`" not in text else text


def _table(keys: list[Key]) -> list[str]:
    rows = [f"| `{k.path}` | `{_cell(k.type)}` | {_cell(_code(k.default))} | {_cell(_prose(k.doc))} |"
            for k in keys]
    return ["| key | type | default | what |", "| --- | --- | --- | --- |", *rows, ""] if rows else []


def render(keys: list[Key]) -> str:
    out = [
        "# Configuration reference",
        "",
        "Every key of the YAML file `flytelite start --config` reads, generated from the configuration's "
        "dataclasses (`flytelite/config/`) when the site is built. A key's doc is the comment above its field "
        "there. All keys are optional. A dotted path is a key inside a section: `engine.workers` is",
        "",
        "```yaml",
        "engine:",
        "  workers: 8",
        "```",
        "",
        "`<name>` stands for a name of your choosing (a client, an agent), `[]` for each item of a list. A "
        "`${NAME}` in any value is replaced by that environment variable; an unset one is an error. "
        "`--home`, `--host`, `--port`, `--role`, `--tls-cert` and `--tls-key` on the command line override "
        "the keys of the same name, and `--log-level` overrides `logging.level`.",
        "",
        "## Top-level keys",
        "",
        *_table([k for k in keys if not k.section and k.parent == ""]),
    ]
    for section in (k for k in keys if k.section):
        out += [f"{'##' if section.parent == '' else '###'} `{section.path}`", ""]
        out += [_prose(text) + "\n" for text in (section.doc, section.about) if text]
        if section.default not in ("see below", "none (off)"):
            out += [f"Type `{_cell(section.type)}`, default `{section.default}`.", ""]
        elif section.default == "none (off)":
            out += ["Absent by default (off).", ""]
        out += _table([k for k in keys if not k.section and k.parent == section.path])
    return "\n".join(out).rstrip("\n") + "\n"


def on_files(files, config):
    """MkDocs hook: the page, generated into the site's files at every build."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render(config_keys())))
    return files


if __name__ == "__main__":
    print(render(config_keys()), end="")
