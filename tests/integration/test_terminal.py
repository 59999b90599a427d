"""The agent terminal, end to end: an agent opened as Neovim starts waits for the real server and
finds this Neovim through the variables it inherits (port, token), in Neovim's cwd. Every other case
of :Gemini and :GeminiFocus (providers, positions, scopes, settings, :checkhealth) is
tests/lua/terminal_spec.lua's, with the host stubbed.

The agent is tests/fixtures/agent_standin/agent.py: like gemini it takes the terminal raw and records
what it was given (environment, cwd) and every byte typed into it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.agent_terminal import Agent, start


def test_an_agent_opened_as_neovim_starts_waits_for_the_server(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    # The user's own VimEnter autocmd: it runs before the plugin's, which starts the server.
    at_start = "vim.api.nvim_create_autocmd('VimEnter', { callback = function() vim.cmd('Gemini') end })"
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}}, init_lua=at_start)
    info = agent.started()
    assert info["env"]["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.wait_state("running")["port"])
    assert info["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"] == nvim.wait_discovery().token
    assert Path(info["cwd"]) == nvim.workspace
