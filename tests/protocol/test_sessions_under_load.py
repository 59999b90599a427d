"""Sessions under load, the Python server alone (moved from tests/integration/test_load.py, whose
mixed-calls test measures a real Neovim's responsiveness and stays there): sessions of clients gone
without a word expire, and at the session cap abandoned sessions make room while streams stay."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import record_figure, wait_for
from tests.support.mcp_http import EventStream, McpHttp, propose


def client_count(server: InProcessServer) -> int:
    """The number of clients the status shows (the last state pushed to Lua)."""
    return int(server.status().get("client_count", -1))


def test_sessions_of_gone_clients_expire(make_server: Callable[..., InProcessServer]) -> None:
    server = make_server(config={"session_idle_timeout_s": 2})
    disc = server.discovery()
    clients = [McpHttp(disc.port, disc.token) for _ in range(3)]
    for c in clients:
        c.initialize()
    wait_for(lambda: client_count(server) == 3, what="three sessions")
    # The clients vanish without a word (like a killed gemini): their sessions expire.
    for c in clients:
        c.close()
    wait_for(lambda: client_count(server) == 0, 15, what="idle sessions expired")
    fresh = McpHttp(disc.port, disc.token)
    fresh.initialize()
    assert "pid" in fresh.call("nvim_info")["structuredContent"]
    fresh.close()
    record_figure("load.session_cleanup", idle_expiry_s=2)


def test_at_the_session_cap_abandoned_sessions_make_room_and_streams_stay(server: InProcessServer) -> None:
    """Crashed clients never end their sessions; at the cap (max_sessions, 64 by default) the
    session idle longest with no event stream and no request in flight ends for a newcomer, as a
    DELETE would end it (its review is released); a session with its stream open is never taken."""
    disc = server.discovery()
    target = server.fake.workspace / "a.py"
    target.write_text("one\n")
    live = McpHttp(disc.port, disc.token)  # the oldest session of all, its stream open
    live.initialize()
    stream = EventStream(live, disc.port)
    wait_for(lambda: any(c["stream_open"] for c in server.status().get("clients", [])), what="stream")
    crashed = propose(disc.port, disc.token, str(target), "ONE\n")  # then gone without a DELETE
    crashed.close()
    wait_for(lambda: list(server.fake.reviews) == [str(target)], what="the crashed client's review open")
    abandoned = []
    for _ in range(62):
        client = McpHttp(disc.port, disc.token)
        client.initialize()
        client.close()  # the client process ends at once
        abandoned.append(client)
    wait_for(lambda: client_count(server) == 64, what="the cap reached")

    fresh = McpHttp(disc.port, disc.token)
    fresh.initialize()  # let in: the crashed client's session, idle longest, made room
    assert "pid" in fresh.call("nvim_info")["structuredContent"]
    wait_for(lambda: server.fake.reviews == {}, what="the ended session's review released")
    assert [path for path, _ in server.fake.released] == [str(target)]
    with pytest.raises(RuntimeError, match="HTTP 404"):
        crashed.call("nvim_info")  # its session is gone, as after a DELETE
    for _ in range(70):  # newcomers keep coming: every idle session goes in turn (`fresh` too)
        newcomer = McpHttp(disc.port, disc.token)
        newcomer.initialize()
        newcomer.close()
    assert "pid" in live.call("nvim_info")["structuredContent"]
    wait_for(lambda: client_count(server) == 64, what="the status settled at the cap")
    stream.close()
