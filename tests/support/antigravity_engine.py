"""The Antigravity engine (PyPI's google-antigravity, its bundled `localharness`) run offline: its
model is the scripted Gemini-API stand-in (tests/support/fake_gemini_api.py), and Neovim's server
is its MCP server "nvim" over Streamable HTTP with the bearer token, as agy would reach it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import google.antigravity as ag
import pytest
from google.antigravity import types
from google.antigravity.hooks import policy

from tests.support.fake_gemini_api import FakeGeminiApi


def as_its_user(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The environment the engine runs in: the harness writes under ~/.gemini/antigravity; the SDK
    checks for a Gemini key even for a model that names its own endpoint (its default image model
    has none)."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_API_KEY", "scripted")


def engine_config(
    model_api: FakeGeminiApi,
    *,
    url: str,
    headers: dict[str, str],
    workspace: Path,
    app_data_dir: Path,
    eager: bool,
    gate: Any = None,
) -> Any:
    """The engine's config with the server at `url` as its MCP server "nvim"; `gate`, a pre-tool
    hook (our gate as agy's hooks.json would run it), else a policy that allows every tool."""
    gated: dict[str, Any] = {"hooks": [gate]} if gate is not None else {"policies": [policy.allow_all()]}
    endpoint = ag.GeminiAPIEndpoint(base_url=model_api.base_url, api_key="scripted")
    return ag.LocalAgentConfig(
        model=ag.ModelTarget(name="scripted", endpoint=endpoint),
        workspaces=[str(workspace)],
        app_data_dir=str(app_data_dir),
        mcp_servers=[
            types.McpStreamableHttpServer(name="nvim", url=url, headers=headers, force_all_tools_eager=eager)
        ],
        **gated,  # (the SDK refuses MCP servers with neither a policy nor a pre-tool hook)
    )


def chat(config: Any, prompt: str) -> None:
    """One run of the engine: `prompt`, then whatever the scripted model answers, to its end."""

    async def run() -> None:
        async with ag.Agent(config) as agent:
            response = await agent.chat(prompt)
            async for _ in response.chunks:
                pass

    asyncio.run(asyncio.wait_for(run(), 120))
