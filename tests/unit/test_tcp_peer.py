"""Which process of ours made a TCP connection to us, and when it started (base/tcp_peer.py):
how a gemini that switched IDE mode on while running is told from one started after the switch."""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from gemini_companion.base import tcp_peer

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux /proc")


@contextmanager
def server() -> Iterator[socket.socket]:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        yield listening


def test_a_connection_from_this_process_is_found_with_its_start_time() -> None:
    with server() as listening, socket.create_connection(listening.getsockname()):
        accepted, peer = listening.accept()
        with accepted:
            ends = (peer, listening.getsockname())
            assert tcp_peer.connecting_process(*ends) == os.getpid()
            started = tcp_peer.connecting_process_started_at(*ends)
    # Independently: /proc/self/stat's field 22 (ticks since boot) after /proc/stat's btime.
    with open("/proc/self/stat", encoding="ascii") as stat:
        ticks = int(stat.read().rpartition(")")[2].split()[19])
    with open("/proc/stat", encoding="ascii") as stat:
        btime = next(int(line.split()[1]) for line in stat if line.startswith("btime "))
    assert started is not None
    assert abs(started - (btime + ticks / os.sysconf("SC_CLK_TCK"))) < 1.5  # btime is whole seconds


def test_a_connection_from_another_process_is_that_process() -> None:
    with server() as listening:
        host, port = listening.getsockname()
        connect = f"import socket, sys; s = socket.create_connection(({host!r}, {port})); sys.stdin.read()"
        child = subprocess.Popen([sys.executable, "-c", connect], stdin=subprocess.PIPE)
        try:
            accepted, peer = listening.accept()
            with accepted:
                assert tcp_peer.connecting_process(peer, (host, port)) == child.pid
                started = tcp_peer.started_at(child.pid)
                assert started is not None and started >= tcp_peer.started_at(os.getpid())  # type: ignore[operator]
        finally:
            child.communicate(b"")


def test_an_ipv4_client_of_a_dual_stack_server_is_found() -> None:
    with socket.socket(socket.AF_INET6) as listening:
        listening.bind(("::", 0))
        listening.listen()
        with socket.create_connection(("127.0.0.1", listening.getsockname()[1])):
            accepted, peer = listening.accept()
            with accepted:  # both ends as ::ffff:127.0.0.1, as the server's socket gives them
                assert tcp_peer.connecting_process(peer[:2], accepted.getsockname()[:2]) == os.getpid()


def test_no_such_connection_is_no_process() -> None:
    with server() as listening:
        assert tcp_peer.connecting_process(("127.0.0.1", 1), listening.getsockname()) is None
        assert tcp_peer.connecting_process_started_at(("127.0.0.1", 1), listening.getsockname()) is None
    assert tcp_peer.connecting_process(("/run/a.sock", 0), ("127.0.0.1", 1)) is None  # not an IP peer
