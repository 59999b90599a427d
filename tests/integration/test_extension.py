"""The Gemini CLI extension (:GeminiExtensionInstall/Uninstall/Env) and the ACP mcpServers entry, in a real
headless Neovim. That gemini itself loads the extension and calls our tools through it is in
test_real_gemini_agent.py."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

from tests.support.agent_terminal import command, errors
from tests.support.helpers import Neovim, mcp_client, wait_for

NAME = "gemini-companion-nvim"


def start_in(make_nvim: Any, home: Path, **env: str) -> Neovim:
    home.mkdir(parents=True, exist_ok=True)
    nvim: Neovim = make_nvim(env={"HOME": str(home), **env})
    nvim.wait_state("running")
    return nvim


def infos(nvim: Neovim) -> list[str]:
    return [str(msg) for msg, level in nvim.notifications() if level == 2]


def test_install_writes_a_token_free_extension_and_uninstall_removes_it(
    make_nvim: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    nvim = start_in(make_nvim, home)
    token = nvim.wait_discovery().token
    nvim.api.command("GeminiExtensionInstall")
    ext = home / ".gemini" / "extensions" / NAME
    manifest = json.loads((ext / "gemini-extension.json").read_text())
    assert manifest == {
        "name": NAME,
        "version": "1.0.0",
        "description": manifest["description"],
        "mcpServers": {
            "nvim": {
                "httpUrl": "http://127.0.0.1:${GEMINI_CLI_IDE_SERVER_PORT}/mcp",
                "headers": {"Authorization": "Bearer ${GEMINI_CLI_IDE_AUTH_TOKEN}"},
            }
        },
        "contextFileName": "GEMINI.md",
    }
    context = (ext / "GEMINI.md").read_text()
    assert "lsp_definition" in context and "get_diagnostics" in context and "dap_" in context
    assert sorted(p.name for p in ext.iterdir()) == [
        "GEMINI.md",
        "gemini-extension.json",
    ]  # no temporary left
    for path in ext.iterdir():
        assert token not in path.read_text()
        assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0  # nobody else may change what gemini loads
    assert any(f"installed the Gemini CLI extension in {ext}" in m for m in infos(nvim))

    (ext / "GEMINI.md").write_text("stale")
    nvim.api.command("GeminiExtensionInstall")  # again: brought up to date
    assert (ext / "GEMINI.md").read_text() == context

    nvim.api.command("GeminiExtensionUninstall")
    assert not ext.exists()
    assert (home / ".gemini" / "extensions").is_dir()
    command(nvim, "GeminiExtensionUninstall")
    assert any(f"not installed ({ext} does not exist)" in e for e in errors(nvim))


def test_the_extension_goes_where_gemini_looks_and_others_are_left_alone(
    make_nvim: Any, tmp_path: Path
) -> None:
    gemini_home = tmp_path / "gemini-home"
    nvim = start_in(make_nvim, tmp_path / "home", GEMINI_CLI_HOME=str(gemini_home))
    nvim.api.command("GeminiExtensionInstall")
    ext = gemini_home / ".gemini" / "extensions" / NAME
    assert (ext / "gemini-extension.json").exists()
    (ext / "notes.txt").write_text("mine")  # the user's own file: kept, and said so
    command(nvim, "GeminiExtensionUninstall")
    assert sorted(p.name for p in ext.iterdir()) == ["notes.txt"]
    assert any("holds other files and stays" in str(m) for m, _ in nvim.notifications())

    (ext / "gemini-extension.json").write_text(json.dumps({"name": "someone-else", "version": "1"}))
    for cmd in ("GeminiExtensionInstall", "GeminiExtensionUninstall"):
        command(nvim, cmd)
    assert json.loads((ext / "gemini-extension.json").read_text())["name"] == "someone-else"
    refusals = [e for e in errors(nvim) if "is not this plugin's" in e]
    assert len(refusals) == 2


def test_env_line_for_another_terminal_is_shown_not_yanked(make_nvim: Any, tmp_path: Path) -> None:
    nvim = start_in(make_nvim, tmp_path / "home")
    found = nvim.wait_discovery()
    nvim.api.command("GeminiExtensionEnv")
    (shown,) = [m for m in infos(nvim) if "export" in m]
    assert f" export GEMINI_CLI_IDE_SERVER_PORT={found.port} GEMINI_CLI_IDE_AUTH_TOKEN={found.token}" in shown
    assert found.token not in nvim.api.call("getreg", '"')
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    command(nvim, "GeminiExtensionEnv")
    assert any("the server is not running" in e for e in errors(nvim))


def test_acp_entry_reaches_this_server(make_nvim: Any, tmp_path: Path) -> None:
    nvim = start_in(make_nvim, tmp_path / "home")
    entry = nvim.lua("return require('gemini_companion').acp_mcp_server()")
    found = nvim.wait_discovery()
    assert entry == {
        "type": "http",
        "name": "nvim",
        "url": found.url,
        "headers": [{"name": "Authorization", "value": f"Bearer {found.token}"}],
    }
    assert nvim.lua("return require('gemini_companion').acp_mcp_server('editor').name") == "editor"
    # What an agent does with it: the URL and header give it our tools.
    (auth,) = entry["headers"]

    async def tool_names() -> list[str]:
        async with mcp_client(entry["url"], auth["value"].removeprefix("Bearer ")) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "nvim_info" in asyncio.run(tool_names())
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    wait_for(lambda: nvim.lua("return require('gemini_companion').acp_mcp_server() == nil"), what="no entry")
