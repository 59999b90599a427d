"""OpenCode integration against a real `opencode serve` (npm opencode-ai), plus lifecycle hooks.
What the server alone does with OpenCode targets (no server there, one that fails, a port another
user took) is in tests/protocol/test_opencode_targets.py."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.helpers import ROOT, Neovim, wait_for
from tests.support.opencode_server import Opencode

pytestmark = pytest.mark.real_agent

STANDIN = ROOT / "tests" / "fixtures" / "opencode_standin"


@pytest.fixture(scope="module")
def opencode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opencode]:
    server = Opencode(tmp_path_factory.mktemp("opencode"))
    yield server
    server.stop()


def opencode_clients(nvim: Neovim) -> list[dict[str, Any]]:
    return [c for c in nvim.server_state().get("clients", []) if "opencode" in c["name"].lower()]


def test_register_by_command_follows_restarts_and_stops(nvim: Neovim, opencode: Opencode) -> None:
    # Each step waits for what it checks, on a loaded machine as long as it takes: OpenCode's own
    # status, our record of the registration (answered, not pending), OpenCode's session with us.
    registered = [{"url": opencode.url, "status": "connected"}]
    nvim.wait_state("running")
    nvim.api.command(f"GeminiOpencodeRegister {opencode.url}")
    wait_for(lambda: opencode.status_of(nvim.workspace) == "connected", 30, what="connected")
    wait_for(lambda: any("registered as 'nvim'" in n[0] for n in nvim.notifications()), what="announced")
    wait_for(lambda: opencode_clients(nvim), 30, what="OpenCode's MCP session in our status")
    state = wait_for(
        lambda: (s := nvim.server_state()).get("opencode") == registered and s,
        30,
        what="registration in the status",
    )

    started = state["started_at"]
    nvim.api.command("GeminiRestart")
    # Re-registered: the restarted server's registration answered, and OpenCode connects to it.
    wait_for(
        lambda: (
            (s := nvim.server_state()).get("state") == "running"
            and s.get("started_at") != started
            and s.get("opencode") == registered
        ),
        30,
        what="registered again by the restarted server",
    )
    wait_for(lambda: opencode_clients(nvim), 30, what="OpenCode connected to the restarted server")
    wait_for(lambda: opencode.status_of(nvim.workspace) == "connected", 30, what="OpenCode says connected")

    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    wait_for(lambda: opencode.status_of(nvim.workspace) == "disabled", 30, what="disabled after stop")


def test_following_opencode_nvim(make_nvim, opencode: Opencode) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua=f"""
        vim.opt.runtimepath:prepend('{STANDIN}')
        require('gemini_companion').setup({{ auto_start = false, integrations = {{ opencode = true }} }})
    """
    )
    time.sleep(0.5)  # proves nothing happened within a window: no start before opencode.nvim's server runs
    assert nvim.server_state()["state"] == "stopped"
    # opencode.nvim starts its server: ours starts too and registers with it.
    nvim.lua(
        "require('opencode.state').store.set('opencode_server', { url = ..., port = ..., mode = 'serve',"
        " is_running = function() return true end })",
        opencode.url,
        opencode.port,
    )
    nvim.wait_state("running")
    wait_for(
        lambda: opencode.status_of(nvim.workspace) == "connected", 30, what="connected via opencode.nvim"
    )
    assert not [n for n in nvim.notifications() if "OpenCode" in n[0]]  # automatic: quiet on success
    nvim.lua("require('opencode.state').store.set('opencode_server', nil)")
    wait_for(
        lambda: "opencode" not in nvim.server_state() or not nvim.server_state()["opencode"],
        what="registration forgotten",
    )


def test_lifecycle_hooks_autocmds_and_statusline(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="""
        _G.__hooks = {}
        require('gemini_companion').setup({
          on_ready = function(info) table.insert(_G.__hooks, { 'on_ready', info }) end,
          on_stop = function() table.insert(_G.__hooks, { 'on_stop' }) end,
        })
        vim.api.nvim_create_autocmd('User', { pattern = { 'GeminiServerReady', 'GeminiServerStopped' },
          callback = function(ev) table.insert(_G.__hooks, { ev.match, ev.data }) end })
        _G.__line = require('gemini_companion').statusline()
    """
    )
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    assert nvim.lua("return _G.__line") == "Gemini ○"  # before the server ran: no error
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ● 0"
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ○"
    hooks = nvim.lua("return _G.__hooks")
    names = [h[0] for h in hooks]
    assert names == ["on_ready", "GeminiServerReady", "on_stop", "GeminiServerStopped"]
    ready = hooks[1][1]
    assert (
        ready["url"] == disc.url and ready["port"] == disc.port and ready["discovery_file"] == str(disc.path)
    )
    assert ready["pid"] > 0 and "token" not in json.dumps(ready).lower()
    assert disc.token not in json.dumps(hooks)


def test_fixed_port_and_token_file_give_a_stable_address(make_nvim) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nvim: Neovim = make_nvim(
        init_lua=f"require('gemini_companion').setup({{ port = {port}, token_file = true }})"
    )
    first = nvim.wait_discovery()
    assert first.port == port
    token_file = nvim.state / "nvim" / "gemini_companion" / "token"
    assert token_file.read_text().strip() == first.token
    assert token_file.stat().st_mode & 0o777 == 0o600
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (
            nvim.server_state().get("started_at", 0) > 0
            and nvim.server_state()["state"] == "running"
            and len(nvim.discovery_files()) == 1
            and json.loads(nvim.discovery_files()[0].read_text())["authToken"] == first.token
        ),
        what="same port and token after restart",
    )
    nvim.api.command("GeminiMcpConfig! claude")
    note = nvim.notifications()[-1][0]
    assert f"127.0.0.1:{port}/mcp" in note and "the token stays valid across :GeminiRestart" in note
    assert "gemini_companion/token" in note

    other: Neovim = make_nvim("other", init_lua=f"require('gemini_companion').setup({{ port = {port} }})")
    state = other.wait_state("failed")
    assert re.search(rf"port {port} is not available", state["error"])
