"""Clients nobody here wrote: the official TypeScript SDK and Gemini CLI's own IdeClient."""

from __future__ import annotations

import json

from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver, ide_client_env


def test_typescript_sdk_client_lists_and_calls_a_neovim_tool(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    with NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=nvim.base) as ts:
        connected = ts.wait_event(lambda e: e.get("event") == "connected", what="connected")
        assert connected["serverInfo"]["name"] == "gemini-companion-nvim"
        assert connected["capabilities"]["tools"]["listChanged"] is True
        listed = ts.send("list")
        assert listed["ok"]
        assert {"nvim_info", "companion_status"} <= {t["name"] for t in listed["result"]["tools"]}
        reply = ts.send("call", name="nvim_info", args={})
        assert reply["ok"] and not reply["result"].get("isError")
        assert json.loads(reply["result"]["content"][0]["text"])["cwd"] == str(nvim.workspace)


def test_typescript_sdk_client_without_token_is_refused(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    with NodeDriver("ts_client.mjs", disc.url, "not-the-token", log_dir=nvim.base) as ts:
        err = ts.wait_event(lambda e: e.get("event") == "error", what="connect error")
        assert err.get("code") == 401


def _ide_client(nvim: Neovim, **env: str) -> NodeDriver:
    return NodeDriver(
        "ide_client.mjs", cwd=nvim.workspace, env=ide_client_env(nvim.env, **env), log_dir=nvim.base
    )


def test_gemini_ide_client_connects_through_the_discovery_file_alone(nvim: Neovim) -> None:
    nvim.wait_discovery()
    (nvim.workspace / "sub").mkdir()
    with NodeDriver(
        "ide_client.mjs", cwd=nvim.workspace / "sub", env=ide_client_env(nvim.env), log_dir=nvim.base
    ) as ide:
        done = ide.wait_event(lambda e: e.get("event") == "connect_done", what="connect_done")
        assert done["status"] == "connected", done
        assert done["ideInfo"] == {"name": "neovim", "displayName": "Neovim (workspace)"}


def test_gemini_ide_client_connects_through_the_env_vars_alone(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    env = wait_for(
        lambda: nvim.lua(
            "return vim.env.GEMINI_CLI_IDE_SERVER_PORT and { port = vim.env.GEMINI_CLI_IDE_SERVER_PORT,"
            " token = vim.env.GEMINI_CLI_IDE_AUTH_TOKEN, ws = vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH,"
            " pid = vim.env.GEMINI_CLI_IDE_PID }"
        ),
        what="env vars set",
    )
    # Hide the file: the client must fall back to the environment Neovim gives its children.
    # (Without any file the CLI cannot tell which IDE it is in, so keep one without port/token.)
    disc.path.write_text(json.dumps({"workspacePath": disc.workspace, "ideInfo": disc.data["ideInfo"]}))
    with _ide_client(
        nvim,
        GEMINI_CLI_IDE_SERVER_PORT=env["port"],
        GEMINI_CLI_IDE_AUTH_TOKEN=env["token"],
        GEMINI_CLI_IDE_WORKSPACE_PATH=env["ws"],
        GEMINI_CLI_IDE_PID=env["pid"],
    ) as ide:
        done = ide.wait_event(lambda e: e.get("event") == "connect_done", what="connect_done")
        assert done["status"] == "connected", done
