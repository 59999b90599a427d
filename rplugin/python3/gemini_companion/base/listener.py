"""Who listens on a TCP address of this machine: one of our processes, another user, nobody.

Before we send a secret (our bearer token, OPENCODE_SERVER_PASSWORD) to a URL on this machine,
the listening socket must belong to us: any local user can listen on a free port (4096 while
`opencode serve` is down, say) and would otherwise receive it.

Linux: the listening sockets in /proc/net/tcp{,6} (owner uid and inode) and the socket inodes
that processes of our uid hold (/proc/<pid>/fd). Elsewhere: `lsof`, limited to our processes.
Those two readings of /proc (`tcp_sockets`, `holders`) serve tcp_peer.py too; this file imports
nothing of ours, because hook_client.py loads it by path.
"""

from __future__ import annotations

import enum
import ipaddress
import os
import pwd
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_PROC_NET = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_TCP_LISTEN = "0A"


class Listening(enum.Enum):
    OURS = "ours"
    NOBODY = "nobody"  # nothing of ours listens there (a connection would be refused)
    OTHER_USER = "other user"
    UNKNOWN = "unknown"  # we could not tell: treat as not ours


@dataclass(frozen=True)
class TcpSocket:
    """One line of /proc/net/tcp{,6}."""

    local: IPAddress
    local_port: int
    remote: IPAddress
    remote_port: int
    state: str  # the kernel's hex code: "0A" listening, "01" established
    uid: int  # who created it
    inode: int


@dataclass(frozen=True)
class Check:
    listening: Listening
    detail: str = ""  # OTHER_USER: "user 'nobody' (uid 65534)"; UNKNOWN: why we could not tell


def local_addresses(host: str, port: int) -> list[IPAddress]:
    """The addresses `host` resolves to that are on this machine; [] for a remote host."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []  # the HTTP client reports the unknown host
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
    return sorted((a for a in addresses if _is_local(a)), key=str)


def _is_local(address: IPAddress) -> bool:
    if address.is_loopback or address.is_unspecified:
        return True
    # An address of one of our interfaces is the only kind we can bind to.
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(address), 0))
        return True
    except OSError:
        return False


def check(host: str, port: int) -> Check | None:
    """Who listens on `host`:`port`; None when `host` is not on this machine (nothing to check)."""
    addresses = local_addresses(host, port)
    if not addresses:
        return None
    if _PROC_NET[0].exists():
        return _check_proc(addresses, port, os.geteuid())
    return _check_lsof(port, os.geteuid())


def _check_proc(addresses: list[IPAddress], port: int, uid: int) -> Check:
    sockets = [
        s
        for s in tcp_sockets()
        if s.state == _TCP_LISTEN and s.local_port == port and any(_accepts(s.local, a) for a in addresses)
    ]
    if not sockets:
        return Check(Listening.NOBODY)
    for found in sockets:
        if found.uid != uid:
            return Check(Listening.OTHER_USER, _user(found.uid))
    inodes = {s.inode for s in sockets}
    missing = inodes - holders(uid, inodes).keys()
    if missing:
        # Created with our uid but held by no process of ours that we can see.
        return Check(Listening.UNKNOWN, "no process of yours holds the listening socket")
    return Check(Listening.OURS)


def tcp_sockets() -> Iterator[TcpSocket]:
    """Every TCP socket of this machine (Linux); none where there is no /proc/net/tcp."""
    for path in _PROC_NET:
        try:
            lines = path.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue  # no tcp6 when IPv6 is off
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            local, local_port = _endpoint(fields[1])
            remote, remote_port = _endpoint(fields[2])
            yield TcpSocket(local, local_port, remote, remote_port, fields[3], int(fields[7]), int(fields[9]))


def _endpoint(hex_endpoint: str) -> tuple[IPAddress, int]:
    address_hex, port_hex = hex_endpoint.split(":")
    # The kernel prints each 32-bit word of the address in host byte order.
    raw = b"".join(
        int(address_hex[i : i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(address_hex), 8)
    )
    return ipaddress.ip_address(raw), int(port_hex, 16)


def _accepts(bound: IPAddress, target: IPAddress) -> bool:
    """Whether a socket listening on `bound` takes connections made to `target`."""
    if target.is_unspecified:  # connecting to 0.0.0.0 or :: reaches the loopback address
        target = ipaddress.ip_address("::1" if target.version == 6 else "127.0.0.1")
    if bound == target:
        return True
    if bound.is_unspecified:  # 0.0.0.0 takes IPv4; :: both (unless IPV6_V6ONLY, which we cannot see)
        return bound.version == 6 or target.version == 4
    return isinstance(bound, ipaddress.IPv6Address) and bound.ipv4_mapped == target


def holders(uid: int, wanted: set[int]) -> dict[int, int]:
    """Which of the socket inodes `wanted` a process running as `uid` has open: inode -> its pid
    (the first such process found)."""
    found: dict[int, int] = {}
    # `with`: the walk stops early, and an iterator left open holds a directory descriptor.
    with os.scandir("/proc") as processes:
        for entry in processes:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
                with os.scandir(f"/proc/{entry.name}/fd") as fds:
                    for fd in fds:
                        link = os.readlink(fd.path)
                        if link.startswith("socket:[") and int(link[8:-1]) in wanted:
                            found.setdefault(int(link[8:-1]), int(entry.name))
            except (OSError, ValueError):
                continue  # the process ended, or is not ours to look into
            if found.keys() == wanted:
                break
    return found


def _check_lsof(port: int, uid: int) -> Check:
    lsof = shutil.which("lsof")
    if lsof is None:
        return Check(Listening.UNKNOWN, "neither /proc/net/tcp nor lsof is there to tell who listens")
    try:
        # Our own processes only: on macOS lsof cannot see other users' sockets anyway.
        found = subprocess.run(
            [lsof, "-nP", "-a", f"-u{uid}", f"-iTCP:{port}", "-sTCP:LISTEN", "-t"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(Listening.UNKNOWN, f"lsof failed: {exc}")
    return Check(Listening.OURS if found.stdout.strip() else Listening.NOBODY)


def _user(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"
