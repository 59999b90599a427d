"""Which process of ours is at the other end of a TCP connection made to us on this machine, and
when it started (Linux: /proc, through listener.py's readings of it).

A client's own socket is the line of /proc/net/tcp{,6} whose local end is the connection's peer and
whose remote end is our server's address; the process of our uid holding that socket's inode made
the connection. Elsewhere, or for another user's process, nothing is found.
"""

from __future__ import annotations

import ipaddress
import os
import time
from pathlib import Path

from .listener import holders, tcp_sockets

Address = tuple[str, int]  # (host, port), as a socket's peername gives it


def connecting_process(peer: Address, server: Address) -> int | None:
    """The pid of our process holding the client end of the connection `peer` -> `server`."""
    try:
        peer_ip, server_ip = ipaddress.ip_address(peer[0]), ipaddress.ip_address(server[0])
    except ValueError:
        return None  # not an IP connection (a Unix socket's peer)
    inodes = {
        s.inode
        for s in tcp_sockets()
        if s.inode
        and (s.local_port, s.remote_port) == (peer[1], server[1])
        and _same(s.local, peer_ip)
        and _same(s.remote, server_ip)
    }
    if not inodes:
        return None
    found = holders(os.geteuid(), inodes)
    return next(iter(found.values()), None)


def _same(
    a: ipaddress.IPv4Address | ipaddress.IPv6Address, b: ipaddress.IPv4Address | ipaddress.IPv6Address
) -> bool:
    """Equal, seeing 127.0.0.1 and ::ffff:127.0.0.1 (an IPv4 peer of an IPv6 socket) as one."""

    def plain(
        x: ipaddress.IPv4Address | ipaddress.IPv6Address,
    ) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return x.ipv4_mapped or x if isinstance(x, ipaddress.IPv6Address) else x

    return plain(a) == plain(b)


def started_at(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch); None when it is gone or unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Field 2 (the command name, in parentheses) may hold spaces and ')': count after its last ')'.
    fields = stat.rpartition(")")[2].split()
    try:
        ticks = int(fields[19])  # field 22: start time in clock ticks since boot
    except (IndexError, ValueError):
        return None
    # Since boot by the clock that counts suspend too, as the kernel's start time does; /proc/stat's
    # btime is whole seconds, too coarse beside a file's mtime.
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def connecting_process_started_at(peer: Address, server: Address) -> float | None:
    """When the process of ours that made the connection `peer` -> `server` started; None when it
    cannot be found (not Linux, another user's process, it is gone)."""
    pid = connecting_process(peer, server)
    return started_at(pid) if pid is not None else None
