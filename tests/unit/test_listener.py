"""Who listens on a local port (the check before OpenCode registration sends secrets)."""

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from gemini_companion.base import listener
from gemini_companion.base.listener import Listening


@contextmanager
def listening(host: str = "127.0.0.1", family: socket.AddressFamily = socket.AF_INET) -> Iterator[int]:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        sock.listen()
        yield sock.getsockname()[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_our_own_listener_is_ours_on_every_spelling_of_loopback() -> None:
    with listening() as port:
        for host in ("127.0.0.1", "localhost", "0.0.0.0"):
            assert listener.check(host, port) == listener.Check(Listening.OURS), host
    with listening("0.0.0.0") as port:  # a wildcard socket takes loopback connections
        assert listener.check("127.0.0.1", port) == listener.Check(Listening.OURS)
    with listening("::", socket.AF_INET6) as port:  # dual stack: takes IPv4 too
        assert listener.check("127.0.0.1", port) == listener.Check(Listening.OURS)
        assert listener.check("::1", port) == listener.Check(Listening.OURS)


def test_a_free_port_has_nobody() -> None:
    assert listener.check("127.0.0.1", free_port()) == listener.Check(Listening.NOBODY)
    # A listener on another loopback address of the same port does not take our connection.
    with listening("127.0.0.2") as port:
        assert listener.check("127.0.0.1", port) == listener.Check(Listening.NOBODY)


def test_remote_hosts_are_not_checked() -> None:
    assert listener.check("192.0.2.1", 80) is None  # TEST-NET-1: never an address of ours


def test_lsof_finds_our_listener_where_there_is_no_proc() -> None:
    uid = os.geteuid()
    with listening() as port:
        assert listener._check_lsof(port, uid) == listener.Check(Listening.OURS)
    assert listener._check_lsof(free_port(), uid) == listener.Check(Listening.NOBODY)
