"""The sockets processes listen on, read from /proc (no ss -p or psutil needed, and it works where ss cannot name
a socket's process): TCP sockets in LISTEN and bound UDP sockets, by process."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TCP_LISTEN = "0A"
UDP_UNCONNECTED = "07"


@dataclass(frozen=True)
class Listening:
    pid: int
    command: str
    protocol: str
    address: str
    port: int

    @property
    def loopback(self) -> bool:
        address = ipaddress.ip_address(self.address)
        # An IPv4 address on a dual-stack socket shows as ::ffff:a.b.c.d.
        mapped = getattr(address, "ipv4_mapped", None)
        return (mapped or address).is_loopback

    def __str__(self) -> str:
        return f"{self.protocol} {self.address}:{self.port} (pid {self.pid}: {self.command[:160]})"


def descendants(pid: int) -> set[int]:
    """`pid` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # The parent is the field after the command, which is in parentheses and may hold spaces.
                stat = (entry / "stat").read_text()
                children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in found:
            found.add(p)
            todo.extend(children.get(p, []))
    return found


def _address(hex_address: str) -> str:
    """/proc/net/tcp's address: 32-bit words in the machine's byte order (little-endian here)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def _sockets() -> dict[int, tuple[str, str, int]]:
    """Every listening TCP and bound UDP socket of this machine's network namespace, by inode."""
    found = {}
    for protocol, state in (("tcp", TCP_LISTEN), ("tcp6", TCP_LISTEN), ("udp", UDP_UNCONNECTED),
                            ("udp6", UDP_UNCONNECTED)):
        try:
            lines = Path(f"/proc/net/{protocol}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == state:
                address, port = fields[1].split(":")
                found[int(fields[9])] = (protocol.rstrip("6"), _address(address), int(port, 16))
    return found


def listening(pids: Iterable[int]) -> list[Listening]:
    """What these processes listen on."""
    sockets, found = _sockets(), []
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and (inode := int(link[8:-1])) in sockets:
                found.append(Listening(pid, command.strip(), *sockets[inode]))
    return found


def exposed(sockets: Iterable[Listening]) -> list[str]:
    """The sockets other machines can reach, described."""
    return [str(s) for s in sockets if not s.loopback]
