"""Faults: the host killed, bad discovery directories, a client that never reads its stream while
Neovim sends context. (A missing TMPDIR, clients that vanish mid-call or mid-stream, the server
alone: tests/protocol/test_vanishing_clients.py; a Neovim blocked at a prompt:
tests/protocol/test_stuck_neovim.py.)"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

from tests.support.helpers import Neovim, connects, initialize_body, wait_for


def test_killed_host_is_reported_and_restart_recovers(nvim: Neovim) -> None:
    first = nvim.wait_discovery()
    nvim.wait_state("running")
    os.kill(first.data["hostPid"], signal.SIGKILL)
    lines = wait_for(
        lambda: (
            (ls := nvim.lua("return require('gemini_companion.status').lines()"))
            and "has exited" in ls[0]
            and ls
        ),
        10,
        what="status says the host died",
    )
    assert lines[0].startswith("State") and "failed" in lines[0]
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ✗"
    nvim.api.command("checkhealth gemini_companion")
    health = "\n".join(nvim.api.current.buffer[:])
    assert "the Python host has exited" in health and ":GeminiRestart starts a new one" in health
    nvim.api.command("bwipeout!")  # the health buffer
    nvim.api.command("GeminiStart")  # start means start: a new host
    second = nvim.wait_discovery(exclude_port=first.port)
    nvim.wait_state("running")
    wait_for(lambda: not first.path.exists(), what="the dead host's file removed")
    assert second.data["hostPid"] != first.data["hostPid"]
    assert connects(second.url, second.token)
    wait_for(
        lambda: nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN") == second.token, what="new token in env"
    )
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")  # the restarted host handles commands as usual
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="running again",
    )
    third = nvim.wait_discovery()
    assert (third.port, third.token) == (second.port, second.token)  # a restart keeps its address
    assert connects(third.url, third.token)


def test_a_dead_host_leaves_no_running_state_or_token_behind(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    nvim.lua(
        """vim.api.nvim_create_autocmd('User', { pattern = 'GeminiServerStopped',
          callback = function(ev) _G.__stopped = ev.data.state end })"""
    )
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN") == disc.token
    os.kill(disc.data["hostPid"], signal.SIGKILL)
    # State, environment and status line agree: nothing says "running", no dead token is handed
    # to the next :terminal.
    state = nvim.wait_state("failed")
    assert "has exited" in state["error"]
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN") is None
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") is None
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ✗"
    assert nvim.lua("return _G.__stopped") == "failed"


def test_unusable_discovery_directory_is_a_clear_error(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    nvim: Neovim = make_nvim(env={"TMPDIR": str(blocker)})
    state = nvim.wait_state("running")
    assert "cannot create discovery directory" in state.get("discovery_error", "")
    lines = "\n".join(nvim.lua("return require('gemini_companion.status').lines()"))
    assert "not written: cannot create discovery directory" in lines
    wait_for(
        lambda: any("cannot create discovery directory" in n[0] for n in nvim.notifications()),
        what="user told",
    )
    nvim.api.command("checkhealth gemini_companion")
    health = "\n".join(nvim.api.current.buffer[:])
    assert "ERROR" in health and "cannot create discovery directory" in health


def test_a_client_that_never_reads_its_stream_hurts_nobody(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    (nvim.workspace / "big.txt").write_text(("x" * 200 + "\n") * 200)
    nvim.api.command("edit big.txt")
    # A client that opens its event stream and then never reads from it.
    init = initialize_body("stuck").decode()
    sock = socket.create_connection(("127.0.0.1", disc.port))
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{disc.port}\r\nAuthorization: Bearer {disc.token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(init)}\r\n\r\n{init}"
    )
    sock.sendall(head.encode())
    answer = sock.recv(65536).decode()
    session = next(
        line.split(":", 1)[1].strip()
        for line in answer.split("\r\n")
        if line.lower().startswith("mcp-session-id")
    )
    sock.sendall(
        (
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{disc.port}\r\nAuthorization: Bearer {disc.token}\r\n"
            f"Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n"
            f"MCP-Protocol-Version: 2025-06-18\r\n\r\n"
        ).encode()
    )
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host_pid = disc.data["hostPid"]
    rss_before = _rss_kib(host_pid)
    # 400 big context updates (16 KiB selections) queue up for the stuck client...
    for i in range(400):
        nvim.api.command(f"normal! {1 + i % 199}GVj")
        nvim.lua("require('gemini_companion.context').schedule()")
        nvim.api.input("<Esc>")
        if i % 50 == 0:
            assert connects(disc.url, disc.token)  # ...while everyone else is served
    assert connects(disc.url, disc.token)
    rss_after = _rss_kib(host_pid)
    assert rss_after - rss_before < 50 * 1024, (rss_before, rss_after)  # latest-wins: bounded
    sock.close()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
