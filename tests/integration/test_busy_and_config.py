"""A stuck Neovim never hangs a client; bad settings are reported once and defaults used."""

from __future__ import annotations

import asyncio
import json
import time

from tests.support.helpers import Neovim, mcp_client, wait_for

FAST_TIMEOUT = "vim.g.gemini_companion = { tool_timeout_ms = 800 }\n"


def test_tool_call_while_neovim_is_busy_fails_cleanly_and_others_are_served(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=FAST_TIMEOUT)
    disc = nvim.wait_discovery()

    async def scenario() -> None:
        async with mcp_client(disc.url, disc.token) as client:
            assert not (await client.call_tool("nvim_info", {})).is_error
            # Busy Lua loop for 3 s, started without waiting for it.
            busy = nvim.workspace / "busy"
            nvim.api.exec_lua(
                "io.open(..., 'w'):close() local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 3e9 do end",
                str(busy),
                async_=True,
            )
            await asyncio.to_thread(wait_for, busy.exists, what="the busy loop started")
            t0 = time.monotonic()
            busy_call = asyncio.ensure_future(client.call_tool("nvim_info", {}))
            # Meanwhile a tool that needs no Neovim answers at once.
            status = await client.call_tool("companion_status", {})
            assert not status.is_error
            assert time.monotonic() - t0 < 0.7
            busy = await busy_call
            elapsed = time.monotonic() - t0
            assert busy.is_error
            assert "Neovim" in busy.content[0].text and "timed out" in busy.content[0].text
            assert elapsed < 2.5  # the 0.8 s timeout (plus a short prompt probe), not the 3 s loop
            # Neovim recovers: the next call works again.
            while (await client.call_tool("nvim_info", {})).is_error:
                assert time.monotonic() - t0 < 15, "Neovim did not recover"

    asyncio.run(scenario())


def test_bad_settings_are_reported_once_with_their_path_and_defaults_apply(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({ tool_timeout_ms = 'soon', bogus_key = 1,"
        " keepalive_s = 15, workspace_roots = { 42 } })\n"
    )
    nvim.wait_discovery()
    nvim.wait_state("running")
    warnings = wait_for(
        lambda: [n[0] for n in nvim.notifications() if "invalid settings" in n[0]], what="settings warning"
    )
    assert len(warnings) == 1
    text = warnings[0]
    assert "`tool_timeout_ms`" in text and "'soon'" in text
    assert "unknown setting `bogus_key`" in text
    assert "`workspace_roots.0`" in text
    assert "keepalive_s" not in text  # the valid one is kept
    # Restarting re-reads the same bad settings: not reported again.
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="running again",
    )
    time.sleep(0.3)  # proves nothing happened within a window: no second report
    assert len([n for n in nvim.notifications() if "invalid settings" in n[0]]) == 1


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
