"""The launch form and typed-interface tables, generated from a ParameterMap / VariableMap (pure).

One field per expected input, its widget chosen by the input's LiteralType
(console.forms.widget_for) and pre-filled with the launch plan's default. Fixed
inputs are shown, not editable. The page script posts the texts to
/console/api/launch, which converts them by type and starts the execution.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from flyteidl.core import interface_pb2, literals_pb2

from flytelite.compiler import type_to_str
from flytelite.console.forms import text_for_literal, widget_for
from flytelite.console.layout import esc, may
from flytelite.console.literals import render_literal


def interface_table(variables: interface_pb2.VariableMap, title: str,
                    params: interface_pb2.ParameterMap | None = None) -> str:
    names = sorted(params.parameters if params is not None else variables.variables)
    if not names:
        return f"<h3>{esc(title)}</h3><p class='muted'>none</p>"
    rows = []
    for name in names:
        if params is not None:
            p = params.parameters[name]
            var, extra = p.var, ("required" if p.required else
                                 f"default {esc(render_literal(p.default))}" if p.HasField("default") else "optional")
        else:
            var, extra = variables.variables[name], None
        rows.append(f"<tr><td>{esc(name)}</td><td><span class='tag'>{esc(type_to_str(var.type))}</span></td>"
                    f"{f'<td>{extra}</td>' if extra is not None else ''}<td class='muted'>{esc(var.description if var.description != name else '')}</td></tr>")
    return (f"<h3>{esc(title)}</h3><table class='interface'><tr><th>Name</th><th>Type</th>{'<th>Required or default</th>' if params is not None else ''}"
            f"<th>Description</th></tr>{''.join(rows)}</table>")


# The launch form's advanced options: (key, label, hint). The page script sends them as `options`.
OPTIONS = [("labels", "Labels", "key=value, key=value"), ("annotations", "Annotations", "key=value, key=value"),
           ("max_parallelism", "Max parallelism", "nodes at once; empty: the launch plan's"),
           ("raw_output_prefix", "Raw output prefix", "where tasks write data; empty: the default"),
           ("overwrite_cache", "Overwrite cache", "")]


@dataclass
class LaunchChoices:
    """What a launch form offers beyond the inputs: other versions and launch plans to launch instead (each
    an href), values to start from (a relaunch's source execution's), and its options' starting values."""

    versions: list[tuple[str, str]] = field(default_factory=list)
    plans: list[tuple[str, str]] = field(default_factory=list)
    values: literals_pb2.LiteralMap | None = None
    options: dict[str, str] = field(default_factory=dict)
    # The execution this launch relaunches (the new one names it as its reference execution).
    relaunch_of: str = ""


def launch_form(kind: str, project: str, domain: str, name: str, version: str,
                params: interface_pb2.ParameterMap, fixed: literals_pb2.LiteralMap | None = None,
                choices: LaunchChoices | None = None) -> str:
    if not may("launch", project, domain):
        return ""
    choices = choices or LaunchChoices()
    target = json.dumps({"kind": kind, "project": project, "domain": domain, "name": name, "version": version,
                         **({"relaunch_of": choices.relaunch_of} if choices.relaunch_of else {})})
    fields = [_picker("Version", version, choices.versions), _picker("Launch plan", name, choices.plans)]
    values = choices.values.literals if choices.values is not None else {}
    for input_name in sorted(params.parameters):
        p = params.parameters[input_name]
        if input_name in values:
            p = interface_pb2.Parameter(var=p.var, default=values[input_name])
        fields.append(_field(input_name, p))
    fixed_values = fixed.literals if fixed is not None else {}
    for input_name in sorted(fixed_values):
        fields.append(f"<label>{esc(input_name)} (fixed)<pre>{esc(render_literal(fixed_values[input_name]))}</pre>"
                      "</label>")
    if not fields:
        fields.append("<p class='muted'>This takes no inputs.</p>")
    return (f"<form class='launch' data-target='{esc(target)}'><b>Launch {esc(name)} <span class='muted'>"
            f"({esc(version)})</span></b>{''.join(fields)}{_options(choices.options)}"
            "<div><button type='submit'>Launch</button></div><div class='launch-result'></div></form>")


def _picker(label: str, current: str, choices: list[tuple[str, str]]) -> str:
    """A select that opens the page of what is picked (nothing when there is nothing else to pick)."""
    if len(choices) < 2:
        return ""
    options = "".join(f"<option value='{esc(href)}'{' selected' if text == current else ''}>{esc(text)}</option>"
                      for text, href in choices)
    return f"<label>{esc(label)}<select data-navigate>{options}</select></label>"


def _options(values: dict[str, str]) -> str:
    fields = []
    for key, label, hint in OPTIONS:
        value = values.get(key, "")
        if key == "overwrite_cache":
            fields.append(f"<label>{label}<input type='checkbox' data-option='{key}'"
                          f"{' checked' if value == 'true' else ''}></label>")
        else:
            fields.append(f"<label>{label}<input type='text' data-option='{key}' value='{esc(value)}' "
                          f"placeholder='{esc(hint)}'></label>")
    return f"<details class='advanced'><summary>Advanced options</summary>{''.join(fields)}</details>"


def _field(name: str, p: interface_pb2.Parameter) -> str:
    lt = p.var.type
    w = widget_for(lt)
    default = text_for_literal(p.default, lt) if p.HasField("default") else ""
    label = f"{esc(name)} <span class='type'>{esc(w.type_text)}{'' if not p.required else ' · required'}</span>"
    attrs = f"name='{esc(name)}' data-input='{esc(name)}' data-kind='{w.kind}'"
    if w.kind == "bool":
        checked = " checked" if default == "true" else ""
        return f"<label>{label}<input type='checkbox' {attrs}{checked}></label>"
    if w.kind == "enum":
        options = "".join(f"<option{' selected' if c == default else ''}>{esc(c)}</option>" for c in w.choices)
        return f"<label>{label}<select {attrs}>{options}</select></label>"
    if w.kind == "json":
        return (f"<label>{label}<textarea {attrs} placeholder='JSON'>{esc(default)}</textarea></label>")
    # Plain text even for numbers: the server converts and checks, and its message says what is wrong.
    mode = {"int": " inputmode='numeric'", "float": " inputmode='decimal'"}.get(w.kind, "")
    hint = {"datetime": "2026-01-31T12:00:00Z", "duration": "90 or 1h30m", "blob": "path or URI"}.get(w.kind, "")
    placeholder = f" placeholder='{esc(hint)}'" if hint else ""
    return f"<label>{label}<input type='text'{mode} {attrs} value='{esc(default)}'{placeholder}></label>"
