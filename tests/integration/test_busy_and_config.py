"""`auto_start = false`: Lua starts no host until asked. (A busy Neovim and bad settings, the server
alone: tests/protocol/test_stuck_neovim.py.)"""

from __future__ import annotations

import asyncio
import json
import time

from tests.support.helpers import Neovim, mcp_client


def test_auto_start_off_keeps_the_server_down_until_asked(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="vim.g.gemini_companion = { auto_start = false }\n")
    time.sleep(
        1.5
    )  # proves nothing happened within a window: no auto-start (it would begin 10 ms after VimEnter)
    assert nvim.discovery_files() == []
    assert nvim.server_state()["state"] == "stopped"
    lines = nvim.lua("return require('gemini_companion.status').lines()")
    assert "stopped" in lines[0]
    nvim.api.command("GeminiStart")
    disc = nvim.wait_discovery()

    async def scenario() -> dict[str, object]:
        async with mcp_client(disc.url, disc.token) as client:
            result = await client.call_tool("companion_status", {})
            value: dict[str, object] = json.loads(result.content[0].text)
            return value

    assert asyncio.run(scenario())["url"] == disc.url
