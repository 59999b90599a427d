"""The agent terminal (:Gemini, :GeminiFocus): providers native, snacks (a stand-in following snacks.nvim's
terminal API) and none, split or float, one global agent or one per tab, in a real headless Neovim.

The agent is tests/fixtures/agent_standin/agent.py: like gemini it takes the terminal raw and records
what it was given (environment, cwd) and every byte typed into it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.agent_terminal import (
    SNACKS,
    Agent,
    agent_windows,
    command,
    current_buf,
    errors,
    start,
)
from tests.support.helpers import wait_for


def test_gemini_toggles_one_agent_that_lives_on_while_hidden(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    nvim.wait_state("running")
    nvim.api.command("edit notes.txt")
    editing = current_buf(nvim)

    nvim.api.command("Gemini")
    info = agent.started()
    (shown,) = agent_windows(nvim)
    assert shown["relative"] == "" and shown["col"] > 0  # a split on the right
    assert shown["width"] == 48  # terminal.size 0.4 of 120 columns
    assert current_buf(nvim) == shown["buf"]  # the cursor is in the agent
    # Started after the server: it finds this Neovim through the variables, in Neovim's cwd.
    assert info["env"]["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.server_state()["port"])
    assert info["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"] == nvim.wait_discovery().token
    assert Path(info["cwd"]) == nvim.workspace

    nvim.api.command("Gemini")
    assert agent_windows(nvim) == []
    assert current_buf(nvim) == editing
    assert nvim.api.call("jobwait", [shown["job"]], 0) == [-1]  # still running

    nvim.api.command("Gemini")
    (again,) = agent_windows(nvim)
    assert (again["buf"], again["job"]) == (shown["buf"], shown["job"])
    assert agent.started()["pid"] == info["pid"]  # the same agent, not a new one
    assert errors(nvim) == []


def test_focus_goes_to_the_agent_and_from_inside_hides_it(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd, "position": "left", "size": 30}})
    nvim.api.command("GeminiFocus")  # not running yet: started and focused
    agent.started()
    (shown,) = agent_windows(nvim)
    assert shown["col"] == 0 and shown["width"] == 30
    nvim.api.command("wincmd l")
    assert current_buf(nvim) != shown["buf"]
    nvim.api.command("GeminiFocus")
    assert current_buf(nvim) == shown["buf"]
    nvim.api.command("GeminiFocus")
    assert agent_windows(nvim) == []
    assert nvim.api.call("jobwait", [shown["job"]], 0) == [-1]


def test_float_and_the_last_window_of_a_tab(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd, "position": "float", "size": 0.5}})
    nvim.api.command("Gemini")
    agent.started()
    (shown,) = agent_windows(nvim)
    assert shown["relative"] == "editor" and shown["width"] == 60
    nvim.api.command("Gemini")
    assert agent_windows(nvim) == []
    # A split that became the tab's only window is hidden by showing another buffer there.
    nvim.lua(
        "require('gemini_companion').setup({ terminal = { cmd = ..., position = 'bottom' } })", agent.cmd
    )
    nvim.api.command("Gemini")
    nvim.api.command("only")
    nvim.api.command("Gemini")
    assert agent_windows(nvim) == []
    assert len(nvim.api.current.tabpage.windows) == 1


def test_one_agent_per_tab_or_one_for_all(make_nvim: Any, tmp_path: Path) -> None:
    first, second = Agent(tmp_path / "first"), Agent(tmp_path / "second")
    nvim = start(make_nvim, {"terminal": {"cmd": first.cmd, "scope": "tab"}})
    nvim.api.command("Gemini")
    first.started()
    (one,) = agent_windows(nvim)
    nvim.api.command("tabnew")
    nvim.lua("local g = vim.g.gemini_companion; g.terminal.cmd = ...; vim.g.gemini_companion = g", second.cmd)
    nvim.api.command("Gemini")
    second.started()
    (two,) = agent_windows(nvim)
    assert two["buf"] != one["buf"]
    nvim.api.command("tabclose")  # the second tab's agent ends with it
    wait_for(lambda: not nvim.api.call("bufexists", two["buf"]), what="the tab's agent gone")
    assert nvim.api.call("jobwait", [one["job"]], 0) == [-1]

    solo = Agent(tmp_path / "solo")
    glob = start(make_nvim, {"terminal": {"cmd": solo.cmd}}, name="global")
    glob.api.command("Gemini")
    solo.started()
    (shared,) = agent_windows(glob)
    glob.api.command("tabnew")
    glob.api.command("Gemini")
    (same,) = agent_windows(glob)
    assert same["buf"] == shared["buf"]


def test_the_agent_quitting_closes_its_window_and_the_next_toggle_starts_anew(
    make_nvim: Any, tmp_path: Path
) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    nvim.api.command("Gemini")
    pid = agent.started()["pid"]
    (shown,) = agent_windows(nvim)
    nvim.api.call("chansend", shown["job"], "\x04")  # the agent exits with status 0
    wait_for(lambda: agent_windows(nvim) == [], what="the window closed")
    (agent.record / "env.json").unlink()
    nvim.api.command("Gemini")
    assert agent.started()["pid"] != pid


def test_settings_and_providers_that_cannot_work_say_why(make_nvim: Any, tmp_path: Path) -> None:
    nvim = start(make_nvim, {"terminal": {"provider": "kitty"}})
    command(nvim, "Gemini")
    assert any("terminal.provider must be one of native, snacks, none" in e for e in errors(nvim))
    nvim.lua("require('gemini_companion').setup({ terminal = { provider = 'snacks' } })")
    command(nvim, "Gemini")
    assert any("snacks.nvim is not installed" in e for e in errors(nvim))
    nvim.lua("require('gemini_companion').setup({ terminal = { cmd = { 'no-such-agent-here' } } })")
    command(nvim, "Gemini")
    # (Waited for: while the server starts, the agent waits for it.)
    wait_for(
        lambda: any("cannot start" in e and "no-such-agent-here" in e for e in errors(nvim)), what="error"
    )
    assert agent_windows(nvim) == []
    nvim.lua("require('gemini_companion').setup({ terminal = { provider = 'none', cmd = 'claude' } })")
    command(nvim, "Gemini")
    (warning,) = [str(m) for m, level in nvim.notifications() if level == 3 and "is 'none'" in str(m)]
    assert "provider is 'none': run \"claude\" in your own terminal" in warning
    assert agent_windows(nvim) == []


def test_snacks_provider_uses_snacks_terminal(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    init = f"vim.opt.runtimepath:append({json.dumps(str(SNACKS))})\n"
    nvim = start(
        make_nvim, {"terminal": {"cmd": agent.cmd, "provider": "snacks", "size": 0.3}}, init_lua=init
    )
    nvim.api.command("Gemini")
    agent.started()
    calls = nvim.lua("return require('snacks.terminal').calls")
    (toggle,) = [call for call in calls if call["fn"] == "toggle"]
    assert toggle["cmd"] == agent.cmd and toggle["opts"]["count"] == 1
    assert toggle["opts"]["win"] == {"position": "right", "width": 0.3}
    assert toggle["opts"]["cwd"] == str(nvim.workspace)
    (shown,) = agent_windows(nvim)
    nvim.api.command("Gemini")
    assert agent_windows(nvim) == []
    nvim.api.command("GeminiFocus")
    (again,) = agent_windows(nvim)
    assert again["buf"] == shown["buf"] and current_buf(nvim) == shown["buf"]


def test_an_agent_asked_for_while_the_server_starts_waits_for_it(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    nvim.wait_state("running")
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    # In one go: the server is not up yet. Asked twice meanwhile: still one agent, shown.
    nvim.lua("vim.cmd('GeminiStart'); vim.cmd('Gemini'); vim.cmd('Gemini')")
    env = agent.started()["env"]
    assert len(agent_windows(nvim)) == 1
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.wait_state("running")["port"])
    assert env["GEMINI_CLI_IDE_AUTH_TOKEN"] == nvim.wait_discovery().token


def test_an_agent_opened_as_neovim_starts_waits_for_the_server(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    # The user's own VimEnter autocmd: it runs before the plugin's, which starts the server.
    at_start = "vim.api.nvim_create_autocmd('VimEnter', { callback = function() vim.cmd('Gemini') end })"
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}}, init_lua=at_start)
    env = agent.started()["env"]
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(nvim.wait_state("running")["port"])


def test_checkhealth_reports_the_agent_and_the_extension(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}}, env={"HOME": str(tmp_path)})
    nvim.wait_state("running")

    def report() -> str:
        text = nvim.health()
        return text[text.index("Agent beside the editor") :]

    text = report()
    assert f'OK the agent {{ "{agent.cmd[0]}", "{agent.cmd[1]}"' in text
    assert ":GeminiExtensionInstall gives them" in text
    nvim.api.command("GeminiExtensionInstall")
    nvim.lua("require('gemini_companion').setup({ terminal = { cmd = 'no-such-agent --flag' } })")
    text = report()
    assert 'WARNING the agent "no-such-agent --flag": no-such-agent is not an executable on $PATH' in text
    assert "OK the Gemini CLI extension is installed" in text
