"""The HTTP edge's SDK workarounds seen from a client (their canaries: tests/unit/test_sdk_compat.py)."""

from __future__ import annotations

import asyncio

import aiohttp
from helpers import Neovim, initialize_body


def test_a_client_resuming_its_event_stream_gets_a_fresh_one(nvim: Neovim) -> None:
    """A GET with Last-Event-ID (a client reconnecting) opens a stream; the SDK alone answers
    nothing at all, and the client would wait forever (sdk_compat.headers_to_drop)."""
    disc = nvim.wait_discovery()
    headers = {
        "Authorization": f"Bearer {disc.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }

    async def scenario() -> tuple[int, str]:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            async with http.post(disc.url, data=initialize_body("resume"), headers=headers) as init:
                assert init.status == 200
                session = {
                    "Mcp-Session-Id": init.headers["mcp-session-id"],
                    "MCP-Protocol-Version": "2025-06-18",
                }
            resume = {**headers, **session, "Last-Event-ID": "0"}
            async with http.get(disc.url, headers=resume) as stream:
                return stream.status, stream.headers.get("Content-Type", "")

    status, content_type = asyncio.run(scenario())
    assert status == 200
    assert content_type.startswith("text/event-stream")
