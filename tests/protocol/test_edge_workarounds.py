"""The HTTP edge's SDK workarounds seen from a client (their canaries: tests/unit/test_sdk_compat.py)."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import Discovery, initialize_body


async def open_session(disc: Discovery, http: aiohttp.ClientSession) -> dict[str, str]:
    """Headers for requests in a fresh session (an `initialize` made with `http`)."""
    async with http.post(disc.url, data=initialize_body("edge"), headers=base_headers(disc)) as init:
        assert init.status == 200
        session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        return {**base_headers(disc), **session}


def base_headers(disc: Discovery) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {disc.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }


async def test_a_quiet_event_stream_carries_keepalives_at_the_configured_interval(
    make_server: Callable[..., InProcessServer],
) -> None:
    """keepalive_s reaches the event stream (sdk_compat.set_event_stream_keepalive): without it
    the first keep-alive comes after sse-starlette's 15 s, and the read below gives up at 10 s.
    (A bound, not a timing assert: only a stream that ignores the setting can miss it.)"""
    disc = make_server(config={"keepalive_s": 1}).discovery()
    pings = 0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        headers = await open_session(disc, http)
        async with http.get(disc.url, headers=headers) as stream:
            assert stream.status == 200
            while pings < 2:  # (the stream may open with the editor's context, an event)
                pings += (await stream.content.readline()).startswith(b": ping")
    assert pings == 2


async def test_a_client_resuming_its_event_stream_gets_a_fresh_one(server: InProcessServer) -> None:
    """A GET with Last-Event-ID (a client reconnecting) opens a stream; the SDK alone answers
    nothing at all, and the client would wait forever (sdk_compat.headers_to_drop)."""
    disc = server.discovery()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        headers = await open_session(disc, http)
        async with http.get(disc.url, headers={**headers, "Last-Event-ID": "0"}) as stream:
            status, content_type = stream.status, stream.headers.get("Content-Type", "")
    assert status == 200
    assert content_type.startswith("text/event-stream")
