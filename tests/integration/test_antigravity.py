"""Neovim's tools for the Antigravity engine (issue 30), tested with the real engine: PyPI's
google-antigravity 0.1.22 bundles `localharness`, "the same core agent harness that powers the
Antigravity CLI". Run through its SDK, offline: its model is the scripted Gemini-API stand-in on
127.0.0.1 (tests/support/fake_gemini_api.py, the request shape the harness sends), and it reaches
the plugin's MCP server over Streamable HTTP with the bearer token, as agy would.

What the harness does with MCP tools (../shared/research/antigravity-harness.md): eager tools are
named `mcp_<server>_<tool>` and get two extra required arguments, `toolAction` and `toolSummary`,
taken out before the call; lazy ones (the default) are listed by name only and called through
`call_mcp_tool`. The SDK does not read agy's own config files: those are not tested here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import google.antigravity as ag
import pytest
from google.antigravity import types
from google.antigravity.hooks import policy

from tests.support.fake_gemini_api import FakeGeminiApi, function_responses
from tests.support.helpers import Neovim

WHY = {"toolAction": "Looking at the editor", "toolSummary": "editor context"}


@pytest.fixture
def model_api() -> Any:
    with FakeGeminiApi() as api:
        yield api


def engine(nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path, *, eager: bool) -> Any:
    disc = nvim.wait_discovery()
    endpoint = ag.GeminiAPIEndpoint(base_url=model_api.base_url, api_key="scripted")
    return ag.LocalAgentConfig(
        model=ag.ModelTarget(name="scripted", endpoint=endpoint),
        workspaces=[str(nvim.workspace)],
        app_data_dir=str(tmp_path / "antigravity"),
        mcp_servers=[
            types.McpStreamableHttpServer(
                name="nvim",
                url=f"http://127.0.0.1:{disc.port}/mcp",
                headers={"Authorization": f"Bearer {disc.token}"},
                force_all_tools_eager=eager,
            )
        ],
        policies=[policy.allow_all()],  # (the SDK refuses MCP servers with neither a policy nor a hook)
    )


def chat(config: Any, prompt: str) -> None:
    async def run() -> None:
        async with ag.Agent(config) as agent:
            response = await agent.chat(prompt)
            async for _ in response.chunks:
                pass

    asyncio.run(asyncio.wait_for(run(), 120))


def tool_output(model_api: FakeGeminiApi) -> str:
    """What the harness told the model the last tool returned."""
    responses = function_responses(model_api.turns[-1])
    assert responses, model_api.turns[-1]
    output: str = responses[-1]["response"]["output"]
    return output


@pytest.fixture
def users_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The harness writes under ~/.gemini/antigravity; the SDK checks for a Gemini key even for a
    # model that names its own endpoint (its default image model has none).
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GEMINI_API_KEY", "scripted")


@pytest.mark.usefixtures("users_engine")
def test_the_engine_calls_a_tool_by_its_eager_name_and_gets_the_users_file(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    (nvim.workspace / "app.py").write_text("def main():\n    pass\n")
    nvim.api.command("edit app.py")
    nvim.api.command("2")
    model_api.call("mcp_nvim_get_editor_context", **WHY)
    model_api.say("You are in app.py.")
    chat(engine(nvim, model_api, tmp_path, eager=True), "What am I looking at?")
    assert "You are Antigravity" in json.dumps(model_api.turns[0]["systemInstruction"])  # the real engine
    output = tool_output(model_api)
    context = json.loads(output[output.index("{") :])  # after the harness's "Created At: ..." lines
    assert context["active_file"]["path"] == str(nvim.workspace / "app.py")
    assert context["active_file"]["cursor"] == {"line": 2, "column": 1}
    assert model_api.unexpected == []


@pytest.mark.usefixtures("users_engine")
def test_lazily_listed_tools_are_called_through_call_mcp_tool(
    nvim: Neovim, model_api: FakeGeminiApi, tmp_path: Path
) -> None:
    (nvim.workspace / "todo.txt").write_text("buy milk\n")
    nvim.api.command("edit todo.txt")
    args = {"ServerName": "nvim", "ToolName": "list_buffers", "Arguments": {}}
    model_api.call("call_mcp_tool", **args, **WHY)
    model_api.say("One buffer.")
    chat(engine(nvim, model_api, tmp_path, eager=False), "Which buffers are open?")
    # The model saw the tools' names first: ours are listed under the server.
    system = json.dumps(model_api.turns[0].get("systemInstruction", {}))
    assert "get_editor_context" in system and "list_buffers" in system
    assert "todo.txt" in tool_output(model_api)
