"""Claude Code's IDE channel, the Python server alone (moved from tests/integration/test_claude_ide.py,
whose tests that need real Lua stay there): the lock file, who may open the WebSocket, frames it
refuses, its share of max_sessions, a stop while claude waits on a review."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.claude_ide import IDE_HEADER, claude_like, open_diff_args
from tests.support.fake_neovim import FakeNeovim, InProcessServer
from tests.support.helpers import until, wait_for


def lock_of(server: InProcessServer) -> tuple[Path, dict[str, Any]]:
    """The lock file claude finds (CLAUDE_CONFIG_DIR is the fake Neovim's `claude_dir`)."""
    path = server.fake.claude_dir / "ide" / f"{server.port}.lock"
    return path, json.loads(path.read_text())


async def handshake(port: int, headers: dict[str, str], protocols: tuple[str, ...] = ("mcp",)) -> int:
    """The HTTP status of a WebSocket handshake (101: let in)."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(f"ws://127.0.0.1:{port}/", protocols=protocols, headers=headers) as ws:
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_lock_file_is_private_names_neovim_and_goes_at_stop(
    make_server: Callable[..., InProcessServer],
) -> None:
    neovim_pid = os.getppid()  # a live process that is not the host (this process, here)
    server = make_server(pid=neovim_pid)
    path, data = lock_of(server)
    assert path.name == f"{server.port}.lock"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert data["pid"] == neovim_pid and data["hostPid"] == os.getpid()  # Neovim itself, not the host
    assert data["transport"] == "ws"
    assert data["workspaceFolders"] == [str(server.fake.workspace)]
    assert data["ideName"] == f"Neovim ({server.fake.workspace.name})"
    assert len(data["authToken"]) >= 43
    # What Lua sets CLAUDE_CODE_SSE_PORT from (test_claude_ide.py checks the variable in :terminal).
    assert server.fake.ready is not None and server.fake.ready["claude_port"] == server.port
    server.lifecycle.stop()
    assert not path.exists()


def test_stale_lock_of_ours_is_removed_others_kept(make_server: Callable[..., InProcessServer]) -> None:
    dead = {"pid": 999_999_999, "owner": "gemini-companion.nvim", "hostPid": 999_999_999, "transport": "ws"}
    planted: list[Path] = []

    def plant(fake: FakeNeovim) -> None:
        directory = fake.claude_dir / "ide"
        directory.mkdir(parents=True, mode=0o700)
        (directory / "1.lock").write_text(json.dumps(dead))
        (directory / "2.lock").write_text(json.dumps({**dead, "owner": None, "ideName": "VS Code"}))
        planted.append(directory)

    server = make_server(setup=plant)
    (directory,) = planted
    assert lock_of(server)[1]["owner"] == "gemini-companion.nvim"  # ours, written after the cleanup
    assert not (directory / "1.lock").exists()
    assert (directory / "2.lock").exists()


def test_switched_off_no_lock_no_websocket(make_server: Callable[..., InProcessServer]) -> None:
    server = make_server(config={"claude": {"enabled": False}})
    ide = server.fake.claude_dir / "ide"
    assert not ide.exists() or not list(ide.iterdir())
    assert server.fake.ready is not None and server.fake.ready.get("claude_port") is None  # no variable set
    assert asyncio.run(handshake(server.port, {IDE_HEADER: server.token})) == 404


def test_websocket_refusals(server: InProcessServer) -> None:
    port, token = server.port, lock_of(server)[1]["authToken"]

    async def plain_get() -> int:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/", headers={IDE_HEADER: token}) as r,
        ):
            return r.status

    async def all_of() -> list[int]:
        return [
            await handshake(port, {}),
            await handshake(port, {IDE_HEADER: token[:-1] + ("A" if token[-1] != "A" else "B")}),
            await handshake(port, {IDE_HEADER: token, "Origin": "http://127.0.0.1"}),
            await handshake(port, {IDE_HEADER: token, "Host": "evil.example:80"}),
            await handshake(port, {IDE_HEADER: token}, protocols=()),
            await plain_get(),
            await handshake(port, {IDE_HEADER: token}),
        ]

    assert asyncio.run(all_of()) == [401, 401, 403, 403, 400, 400, 101]


def test_malformed_frames_and_an_oversized_one_leave_the_server_serving(
    make_server: Callable[..., InProcessServer],
) -> None:
    server = make_server(config={"max_body_bytes": 65536})
    port, token = server.port, lock_of(server)[1]["authToken"]

    async def run() -> tuple[list[Any], int | None, list[str]]:
        answers = []
        async with claude_like(port, token) as claude:
            for frame in (
                "not json",
                "[]",
                '{"jsonrpc": "2.0", "id": 7}',
                '{"jsonrpc":"2.0","id":8,"method":5}',
            ):
                await claude.ws.send_str(frame)
            await claude.ws.send_bytes(b"\xff\xfe")
            answers.append((await claude.request("ping"))["result"])
            await claude.ws.send_str("x" * 70_000)  # over max_body_bytes: the socket is closed
            await until(lambda: claude.ws.closed, what="oversized frame refused")
            code = claude.ws.close_code
        async with claude_like(port, token) as claude:  # and the next connection is served as ever
            names = [t["name"] for t in (await claude.request("tools/list"))["result"]["tools"]]
        return answers, code, names

    answers, code, names = asyncio.run(run())
    assert answers == [{}]
    assert code == 1009
    told = wait_for(lambda: [m for m, _ in server.fake.notifications if "max_body_bytes" in m], what="told")
    assert len(told) == 1 and "sent a request of more than 64 KiB, over max_body_bytes (64 KiB)" in told[0]
    assert "openDiff" in names


def test_websocket_sessions_count_against_max_sessions(make_server: Callable[..., InProcessServer]) -> None:
    server = make_server(config={"max_sessions": 1})
    port, token = server.port, lock_of(server)[1]["authToken"]

    async def run() -> int:
        async with claude_like(port, token), aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(
                    f"ws://127.0.0.1:{port}/", protocols=("mcp",), headers={IDE_HEADER: token}
                )
            return refused.value.status

    assert asyncio.run(run()) == 503


def test_stopping_with_a_claude_session_waiting_on_a_review_is_prompt(server: InProcessServer) -> None:
    target = server.fake.workspace / "f.txt"
    target.write_text("old\n")
    port, token = server.port, lock_of(server)[1]["authToken"]

    async def run() -> tuple[bool, int | None]:
        async with claude_like(port, token) as claude:
            call = claude.start(
                "tools/call", {"name": "openDiff", "arguments": open_diff_args(target, "new\n")}
            )
            await asyncio.to_thread(wait_for, lambda: str(target) in server.fake.reviews, what="the review")
            await asyncio.to_thread(server.lifecycle.stop)  # :GeminiStop
            await asyncio.to_thread(server.wait_state, "stopped", 5)
            await until(lambda: claude.ws.closed, 5, what="the WebSocket closed by the stop")
            return call.done(), claude.ws.close_code

    answered, code = asyncio.run(run())
    assert not answered  # no answer is made up for the user: the review was never decided
    assert code is not None
    assert target.read_text() == "old\n"
