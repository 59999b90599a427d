""":GeminiMcpConfig — snippets for other MCP clients: readable, lasting, and the token kept off disk."""

from __future__ import annotations

import json
import re
import string
import urllib.request
from pathlib import Path

from tests.support.helpers import Neovim, wait_for

# A clipboard provider that keeps what reaches + and * where the test can see it.
FAKE_CLIPBOARD = """
_G.__clipboard = {}
local function copy(reg) return function(lines) _G.__clipboard[reg] = table.concat(lines, '\\n') end end
local function paste(reg) return function() return vim.split(_G.__clipboard[reg] or '', '\\n') end end
vim.g.clipboard = { name = 'test', copy = { ['+'] = copy('+'), ['*'] = copy('*') },
  paste = { ['+'] = paste('+'), ['*'] = paste('*') } }
"""


def config_note(nvim: Neovim, args: str) -> tuple[str, str]:
    """Run :GeminiMcpConfig `args`; the snippet and the note under it, as the user reads them."""
    nvim.api.command(f"GeminiMcpConfig{args}")
    shown = nvim.notifications()[-1][0]
    header, rest = shown.split(":\n", 1)
    assert header.endswith(" config")
    snippet, note = rest.split("\n\n", 1)
    return snippet, note


def messages(nvim: Neovim) -> str:
    return str(nvim.api.command_output("messages"))


def test_snippets_are_indented_json_and_no_clipboard_is_no_complaint(nvim: Neovim) -> None:
    nvim.wait_state("running")
    assert nvim.api.call("has", "clipboard") == 0  # a headless Neovim in a container: no provider
    for format in ("gemini", "opencode", "claude", "json"):
        snippet, note = config_note(nvim, f" {format}")
        assert snippet == json.dumps(json.loads(snippet), indent=2, sort_keys=True), format
        assert nvim.api.call("getreg", '"') == snippet
        assert note.startswith('Yanked to "".')
    assert "clipboard" not in messages(nvim)
    assert "No provider" not in json.dumps(nvim.notifications())


def test_the_claude_snippet_keeps_working_after_a_restart(nvim: Neovim) -> None:
    nvim.wait_state("running")
    snippet, note = config_note(nvim, " claude")
    config = json.loads(snippet)["mcpServers"]["nvim"]
    assert config == {
        "type": "http",
        "url": "http://127.0.0.1:${GEMINI_CLI_IDE_SERVER_PORT}/mcp",
        "headers": {"Authorization": "Bearer ${GEMINI_CLI_IDE_AUTH_TOKEN}"},
    }
    assert ".mcp.json" in note and "not `claude mcp add`" in note
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="restarted",
    )

    # Claude Code started from Neovim's :terminal expands ${VAR} from its environment.
    def expand(text: str) -> str:
        return string.Template(text).substitute(
            {name: nvim.lua(f"return vim.env.{name}") for name in re.findall(r"\$\{(\w+)\}", text)}
        )

    request = urllib.request.Request(
        expand(config["url"]),
        data=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "claude-code", "version": "2"},
                },
            }
        ).encode(),
        headers={
            "Authorization": expand(config["headers"]["Authorization"]),
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200


def test_the_literal_token_is_never_yanked_nor_saved_by_shada(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=FAKE_CLIPBOARD)
    token = nvim.wait_discovery().token
    nvim.wait_state("running")
    config_note(nvim, " gemini")  # without !: yanked to "" and + (the provider works)
    assert "${GEMINI_CLI_IDE_AUTH_TOKEN}" in nvim.lua("return _G.__clipboard['+']")
    for format in ("gemini", "claude"):
        snippet, note = config_note(nvim, f"! {format}")
        assert token in snippet  # printed for the user to copy
        assert note.startswith("Not yanked: it holds the live token")
    registers = {name: nvim.api.call("getreg", name) for name in '"0123456789abcdefghijklmnopqrstuvwxyz-+*'}
    assert not [name for name, value in registers.items() if token in value]
    assert token not in json.dumps(nvim.lua("return _G.__clipboard"))
    shada = tmp_path / "saved.shada"
    nvim.api.command(f"wshada! {shada}")
    saved = shada.read_bytes()
    assert b"GEMINI_CLI_IDE_AUTH_TOKEN" in saved  # the registers are in it: the snippet without !
    assert token.encode() not in saved


def test_agy_gets_literal_values_only_when_asked(nvim: Neovim) -> None:
    """Issue 30: agy's docs name no ${VAR} expansion in mcp_config.json, so an entry that works
    holds the token: only `!` prints one, never yanked; without `!` the user is told why."""
    nvim.wait_state("running")
    nvim.api.command("GeminiMcpConfig agy")
    said = nvim.notifications()[-1][0]
    assert "reads no environment variables" in said and ":GeminiMcpConfig! agy" in said
    assert nvim.api.call("getreg", '"') == ""
    snippet, note = config_note(nvim, "! agy")
    state = nvim.server_state()
    entry = json.loads(snippet)["mcpServers"]["nvim"]
    assert entry["serverUrl"] == f"http://127.0.0.1:{state['port']}/mcp"
    assert entry["headers"]["Authorization"] == f"Bearer {nvim.wait_discovery().token}"
    assert note.startswith("Use it in agy's ~/.gemini/config/mcp_config.json") and "Not yanked" in note
    assert nvim.api.call("getreg", '"') == ""
