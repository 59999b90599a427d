"""The HTTP edge's SDK workarounds seen from a client (their canaries: tests/unit/test_sdk_compat.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.helpers import Neovim, initialize_body, wait_for
from tests.support.mcp_http import McpHttp


def open_session(disc: Any, http: aiohttp.ClientSession) -> Any:
    """Headers for requests in a fresh session (an `initialize` made with `http`)."""

    async def initialize() -> dict[str, str]:
        async with http.post(disc.url, data=initialize_body("edge"), headers=base_headers(disc)) as init:
            assert init.status == 200
            session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
            return {**base_headers(disc), **session}

    return initialize()


def base_headers(disc: Any) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {disc.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }


def test_a_quiet_event_stream_carries_keepalives_at_the_configured_interval(make_nvim: Any) -> None:
    """keepalive_s reaches the event stream (sdk_compat.set_event_stream_keepalive): without it
    the first keep-alive comes after sse-starlette's 15 s, and the read below gives up at 10 s.
    (A bound, not a timing assert: only a stream that ignores the setting can miss it.)"""
    nvim: Neovim = make_nvim(init_lua="vim.g.gemini_companion = { keepalive_s = 1 }\n")
    disc = nvim.wait_discovery()

    async def scenario() -> int:
        pings = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            headers = await open_session(disc, http)
            async with http.get(disc.url, headers=headers) as stream:
                assert stream.status == 200
                while pings < 2:  # (the stream opens with the editor's context, an event)
                    pings += (await stream.content.readline()).startswith(b": ping")
        return pings

    assert asyncio.run(scenario()) == 2


def test_a_client_resuming_its_event_stream_gets_a_fresh_one(nvim: Neovim) -> None:
    """A GET with Last-Event-ID (a client reconnecting) opens a stream; the SDK alone answers
    nothing at all, and the client would wait forever (sdk_compat.headers_to_drop)."""
    disc = nvim.wait_discovery()

    async def scenario() -> tuple[int, str]:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            headers = await open_session(disc, http)
            async with http.get(disc.url, headers={**headers, "Last-Event-ID": "0"}) as stream:
                return stream.status, stream.headers.get("Content-Type", "")

    status, content_type = asyncio.run(scenario())
    assert status == 200
    assert content_type.startswith("text/event-stream")


def _resident_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return next(int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:"))


def test_big_requests_give_their_memory_back(nvim: Neovim) -> None:
    """Reviews of long files (~0.9 MB openDiff bodies) leave the host where it was: the C
    allocator would otherwise keep ~1 MiB of each, for as long as Neovim runs."""
    disc = nvim.wait_discovery()
    host = int(nvim.server_state()["host_pid"])
    client = McpHttp(disc.port, disc.token)
    client.initialize()
    target = nvim.workspace / "long.py"
    target.write_text("".join(f"value_{i} = {i}\n" for i in range(50_000)))
    proposal = "".join(f"value_{i} = {i * 2}\n" for i in range(50_000))

    def pending() -> int:
        return int(nvim.lua("return #require('gemini_companion.review').pending()"))

    def review() -> None:
        client.call("openDiff", {"filePath": str(target), "newContent": proposal})
        wait_for(lambda: pending() == 1, 10, what="the review open")
        nvim.lua("vim.cmd('GeminiReject')")
        wait_for(lambda: pending() == 0, 10, what="the review closed")

    review()  # the first one loads what every review uses
    before = _resident_mib(host)
    for _ in range(8):
        review()
    wait_for(lambda: _resident_mib(host) <= before + 3, 10, what=f"the host back near {before:.1f} MiB")
    client.close()
