"""The foundation, end to end: real headless Neovim, real MCP clients, real HTTP. (A client's first
tool calls and the refusal of bad credentials, the server alone: tests/protocol/test_first_requests.py.)"""

from __future__ import annotations

import asyncio
import os
import stat
import time

import aiohttp
import pytest

from tests.support.helpers import Neovim, initialize_body, mcp_client, raw_request, record_figure, wait_for


def test_starts_by_itself_and_writes_a_private_discovery_file(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    ready_s = time.monotonic() - nvim.started_at
    record_figure("startup.time_to_discovery_file_s", value=round(ready_s, 3))
    # How long starting the Python host (its jobstart) blocked Neovim (after the first screen).
    block_ms = wait_for(lambda: nvim.lua("return require('gemini_companion.host').start_block_ms"))
    record_figure("startup.host_boot_block_ms", value=round(block_ms, 1))

    mode = stat.S_IMODE(disc.path.stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(disc.path.parent.stat().st_mode) == 0o700
    pid = nvim.lua("return vim.uv.os_getppid()")
    assert disc.path.name == f"gemini-ide-server-{pid}-{disc.port}.json"
    assert disc.data["ideInfo"] == {"name": "neovim", "displayName": "Neovim (workspace)"}
    assert disc.workspace == str(nvim.workspace)
    assert len(disc.token) >= 43  # 256 bits, url-safe base64
    assert None not in disc.data.values()

    nvim.wait_state("running")
    env = nvim.lua(
        "return { vim.env.GEMINI_CLI_IDE_SERVER_PORT, vim.env.GEMINI_CLI_IDE_PID, "
        "vim.env.GEMINI_CLI_IDE_WORKSPACE_PATH, vim.env.GEMINI_CLI_IDE_AUTH_TOKEN }"
    )
    assert env == [str(disc.port), str(pid), str(nvim.workspace), disc.token]
    # :terminal / jobstart children inherit them
    out = nvim.lua("return vim.fn.system({'sh', '-c', 'echo $GEMINI_CLI_IDE_SERVER_PORT'})")
    assert out.strip() == str(disc.port)


def test_status_reports_clients_and_never_the_token(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()

    async def scenario() -> list[str]:
        async with mcp_client(disc.url, disc.token) as client:
            await client.list_tools()
            # pynvim's client runs its own loop: drive Neovim from a worker thread meanwhile
            state = await asyncio.to_thread(
                wait_for,
                lambda: (s := nvim.server_state()).get("client_count") == 1 and s,
                what="client in status",
            )
            assert state["clients"][0]["name"] == "mcp"
            lines: list[str] = await asyncio.to_thread(
                nvim.lua, "return require('gemini_companion.status').lines()"
            )
            return lines

    lines = asyncio.run(scenario())
    text = "\n".join(lines)
    assert "running" in text
    assert disc.url in text
    assert str(disc.path) in text
    assert str(nvim.workspace) in text
    assert "protocol 2025-" in text
    assert "gemini_companion.log" in text
    assert disc.token not in text
    # the float opens and closes
    nvim.api.command("GeminiStatus")
    assert nvim.lua("return vim.bo.filetype") == "gemini_companion_status"
    nvim.api.feedkeys("q", "x", False)
    assert disc.token not in nvim.log_text()
    assert "listening on" in nvim.log_text()


INIT = initialize_body("raw")


def test_stop_start_restart_are_idempotent_and_manage_the_file(nvim: Neovim) -> None:
    first = nvim.wait_discovery()
    nvim.wait_state("running")

    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    wait_for(lambda: not first.path.exists(), what="discovery file removed")
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") is None
    with pytest.raises(aiohttp.ClientConnectionError):
        asyncio.run(raw_request(first.port, headers={"Authorization": f"Bearer {first.token}"}, data=INIT))
    nvim.api.command("GeminiStop")
    wait_for(lambda: any("not running" in n[0] for n in nvim.notifications()), what="'not running' message")

    nvim.api.command("GeminiStart")
    second = nvim.wait_discovery()
    nvim.wait_state("running")
    nvim.api.command("GeminiStart")
    wait_for(lambda: any("already running" in n[0] for n in nvim.notifications()), what="'already' message")
    assert len(nvim.discovery_files()) == 1

    # A restart keeps the port and token while the port is free: agents started from Neovim keep
    # reaching it (their environment has them). A start after a stop had a new port and token.
    assert (second.port, second.token) != (first.port, first.token)
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="running again",
    )
    third = nvim.wait_discovery()
    assert (third.path, third.port, third.token) == (second.path, second.port, second.token)
    assert len(nvim.discovery_files()) == 1
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN") == third.token


def test_quitting_neovim_removes_the_file_and_ends_the_host(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    host_pid = disc.data["hostPid"]
    t0 = time.monotonic()
    assert nvim.quit() == 0
    record_figure("shutdown.quit_s", value=round(time.monotonic() - t0, 3))
    assert not disc.path.exists()
    wait_for(lambda: not _alive(host_pid), 5, what="host process exit")


def test_sigkill_leaves_no_server_and_the_next_start_cleans_up(make_nvim) -> None:  # type: ignore[no-untyped-def]
    first = make_nvim("first")
    disc = first.wait_discovery()
    host_pid = disc.data["hostPid"]
    os.kill(host_pid, 9)  # Neovim and its host both die without any cleanup
    first.kill()
    wait_for(lambda: not _alive(host_pid), 5, what="host gone")
    with pytest.raises(aiohttp.ClientConnectionError):
        asyncio.run(raw_request(disc.port, headers={"Authorization": f"Bearer {disc.token}"}, data=INIT))
    assert disc.path.exists()  # nobody could remove it...

    second = make_nvim("second", tmpdir=first.tmpdir)
    new = second.wait_discovery(exclude_port=disc.port)
    wait_for(lambda: not disc.path.exists(), what="stale file removed")  # ...until the next start
    assert new.path.exists()


def test_neovim_killed_alone_takes_its_host_down(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.kill()  # SIGKILL to Neovim only: the host sees EOF and exits, cleaning up
    wait_for(lambda: not _alive(disc.data["hostPid"]), 10, what="host exit")
    wait_for(lambda: not disc.path.exists(), 5, what="file removed by the exiting host")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of a dead parent counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_checkhealth_reports_a_running_server(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    nvim.api.command("checkhealth gemini_companion")
    text = "\n".join(nvim.api.current.buffer[:])
    assert "ERROR" not in text, text
    assert f"running at {disc.url}" in text
    assert "remote plugin registered" in text
    assert "gemini_companion import" in text
