"""A stuck Neovim never hangs a client, and bad settings are reported once with defaults used: the
Python server alone (moved from tests/integration/test_busy_and_config.py and test_faults.py; a busy
Lua is the fake's loop held, a hit-enter prompt its `prompt`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import connects, mcp_client, wait_for


def test_tool_call_while_neovim_is_busy_fails_cleanly_and_others_are_served(
    make_server: Callable[..., InProcessServer],
) -> None:
    server = make_server(config={"tool_timeout_ms": 800})
    disc = server.discovery()
    busy_until = threading.Event()

    async def scenario() -> None:
        async with mcp_client(disc.url, disc.token) as client:
            assert not (await client.call_tool("nvim_info", {})).is_error
            # A busy Lua loop, started without waiting for it: it holds Neovim until released.
            server.fake.async_call(busy_until.wait, 30)
            busy_call = asyncio.ensure_future(client.call_tool("nvim_info", {}))
            # Meanwhile a tool that needs no Neovim answers.
            status = await client.call_tool("companion_status", {})
            assert not status.is_error
            busy = await busy_call  # the 0.8 s timeout (plus a short prompt probe), not the busy loop
            assert not busy_until.is_set()
            assert busy.is_error
            assert "Neovim" in busy.content[0].text and "timed out" in busy.content[0].text
            busy_until.set()
            # Neovim recovers: the next call works again.
            await asyncio.to_thread(
                wait_for, lambda: connects(disc.url, disc.token), what="Neovim answers again"
            )

    try:
        asyncio.run(scenario())
    finally:
        busy_until.set()


def test_a_prompt_blocking_neovim_gives_a_precise_error_and_recovery(
    make_server: Callable[..., InProcessServer],
) -> None:
    server = make_server(config={"tool_timeout_ms": 1000})
    disc = server.discovery()
    server.fake.prompt()  # `:echo "one\ntwo\nthree"` with a UI attached: Press ENTER

    async def scenario() -> tuple[str, str, bool]:
        async with mcp_client(disc.url, disc.token) as client:
            blocked = await client.call_tool("nvim_info", {})
            # a second call is told at once while Neovim still waits (not run, no timeout)
            again = await client.call_tool("nvim_info", {})
            status = await client.call_tool("companion_status", {})
            assert blocked.is_error and again.is_error
            return blocked.content[0].text, again.content[0].text, not status.is_error

    try:
        text, again, status_ok = asyncio.run(scenario())
    finally:
        server.fake.answer_prompt()
    assert "waiting for the user at a prompt" in text and "timed out after 1 s" in text
    assert "waiting for the user at a prompt" in again and "was not run" in again
    assert status_ok
    wait_for(lambda: connects(disc.url, disc.token), what="recovered")


def invalid_settings_reports(server: InProcessServer) -> list[str]:
    return [message for message, _ in server.fake.notifications if "invalid settings" in message]


def test_bad_settings_are_reported_once_with_their_path_and_defaults_apply(
    make_server: Callable[..., InProcessServer],
) -> None:
    server = make_server(
        config={"tool_timeout_ms": "soon", "bogus_key": 1, "keepalive_s": 15, "workspace_roots": [42]}
    )
    warnings = wait_for(lambda: invalid_settings_reports(server), what="settings warning")
    assert len(warnings) == 1
    text = warnings[0]
    assert "`tool_timeout_ms`" in text and "'soon'" in text
    assert "unknown setting `bogus_key`" in text
    assert "`workspace_roots.0`" in text
    assert "keepalive_s" not in text  # the valid one is kept
    # Restarting re-reads the same bad settings: not reported again. (A report comes before the
    # server's ON_READY, on the same channel: once ON_READY is in, so would a second report be.)
    server.fake.ready = None
    server.restart()
    wait_for(lambda: server.fake.ready is not None, what="the restarted server ready")
    assert len(invalid_settings_reports(server)) == 1
