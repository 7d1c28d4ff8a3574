"""Names Kubernetes objects of a task attempt carry, as FlytePropeller derives them.

The pod of an attempt is named `<execution>-<node>-<attempt>` (FlytePropeller's generated name), so a
replica that restarts finds the pod it created instead of creating a second one. Parts longer than
FlytePropeller's limit (50 characters) become "f" and the FNV-1a hash of the joined name in lower-case
base32, as FlytePropeller's FixedLengthUniqueIDForParts does; the result is made a DNS-1123 name.
Labels follow FlytePropeller's keys (execution-id, project, domain, workflow-name, node-id, task-name,
interruptible), plus flytelite's own ones that select its pods and name the attempt.
"""

from __future__ import annotations

import re

from flytelite.context import ExecutionKey

MAX_GENERATED_NAME = 50
ATTEMPT_LABEL = "flytelite.io/attempt"
_BASE32 = "abcdefghijklmnopqrstuvwxyz123456"
_NOT_DNS = re.compile(r"[^a-z0-9.-]+")
_NOT_LABEL = re.compile(r"[^a-z0-9._-]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def fnv1a_32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _base32(value: bytes) -> str:
    bits, width, out = 0, 0, []
    for byte in value:
        bits, width = (bits << 8) | byte, width + 8
        while width >= 5:
            width -= 5
            out.append(_BASE32[(bits >> width) & 31])
    if width:
        out.append(_BASE32[(bits << (5 - width)) & 31])
    return "".join(out)


def fixed_length_id(parts: list[str], max_length: int = MAX_GENERATED_NAME) -> str:
    """The parts joined with "-" (empty leading parts skipped); past max_length, "f" + base32(FNV-1a-32)."""
    joined = "-".join(p for i, p in enumerate(parts) if p or i > 0).lstrip("-")
    if len(joined) <= max_length:
        return joined
    return "f" + _base32(fnv1a_32(joined.encode()).to_bytes(4, "big"))


def dns_name(name: str) -> str:
    """A DNS-1123 subdomain made of `name` (FlytePropeller's ConvertToDNS1123SubdomainCompatibleString)."""
    name = _NOT_DNS.sub("-", _CAMEL.sub(r"\1-\2", name).lower()).strip(".-")
    return name[:253].rstrip(".-") or "x"


def pod_name(key: ExecutionKey, node_id: str, attempt: int) -> str:
    return dns_name(fixed_length_id([key[2], node_id, str(attempt)]))


def label_value(value: str) -> str:
    """FlytePropeller's SanitizeLabelValue: lower case, invalid characters as "-", at most 63 characters."""
    return _NOT_LABEL.sub("-", value.lower())[:63].strip("-._")


def namespace(template: str, project: str, domain: str) -> str:
    """The namespace of a project and domain from a template such as `{{ project }}-{{ domain }}`."""
    name = re.sub(r"{{\s*project\s*}}", project, template)
    name = re.sub(r"{{\s*domain\s*}}", domain, name)
    return _NOT_DNS.sub("-", name.lower()).replace(".", "-").strip("-")[:63]
