"""Sessions the Antigravity engine never ends, the server alone (moved from
tests/integration/test_antigravity.py, where what the engine does with Neovim's tools and reviews
stays). The real engine (tests/support/antigravity_engine.py) against the in-process server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.antigravity_engine import as_its_user, chat, engine_config
from tests.support.fake_gemini_api import FakeGeminiApi
from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import mcp_client

pytestmark = pytest.mark.real_agent


def clients_shown(server: InProcessServer) -> int:
    """The session count :GeminiStatus shows (status.lua counts the state's clients)."""
    return len(server.status().get("clients") or [])


def test_sessions_the_engine_never_ends_do_not_pile_up(
    make_server: Callable[..., InProcessServer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The engine never ends its MCP session (no DELETE) and opens one per run. More runs than the
    session cap allows, against a cap a user sets (`max_sessions = 3`: 65 runs against the default
    64 would take minutes): the count :GeminiStatus shows stays within it, and a new client still
    gets in and calls a tool."""
    as_its_user(monkeypatch, tmp_path / "home")
    cap, runs = 3, 7
    server = make_server(config={"max_sessions": cap})
    disc = server.discovery()
    with FakeGeminiApi() as model_api:
        for run in range(runs):
            model_api.say(f"Run {run}.")
            config = engine_config(
                model_api,
                url=disc.url,
                headers={"Authorization": f"Bearer {disc.token}"},
                workspace=server.fake.workspace,
                app_data_dir=tmp_path / "antigravity",
                eager=False,
            )
            chat(config, "Hello")
            assert clients_shown(server) <= cap
    assert server.log_text().count("client connected: antigravity-client") == runs  # a session each

    async def call_a_tool() -> Any:
        async with mcp_client(disc.url, disc.token) as client:
            return await client.call_tool("nvim_info", {})

    assert not asyncio.run(call_a_tool()).is_error
    assert clients_shown(server) <= cap
