"""A client that speaks Claude Code's IDE protocol (WebSocket, lock file) the way claude does, and its
reviews."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.helpers import Neovim, wait_for


def lock_of(nvim: Neovim) -> tuple[Path, dict[str, Any]]:
    directory = nvim.base / "claude" / "ide"

    def find() -> tuple[Path, dict[str, Any]] | None:
        for path in directory.glob("*.lock") if directory.exists() else ():
            return path, json.loads(path.read_text())
        return None

    return wait_for(find, 30, what="Claude Code lock file")


@contextlib.asynccontextmanager
async def claude_like(port: int, token: str) -> AsyncIterator[ClaudeLike]:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"ws://127.0.0.1:{port}/", protocols=("mcp",), headers={IDE_HEADER: token}) as ws,
    ):
        client = ClaudeLike(ws)
        init = await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"roots": {}, "elicitation": {}},
                "clientInfo": {"name": "claude-code", "version": "2.1.197"},
            },
        )
        assert init["result"]["protocolVersion"] == "2025-11-25", init
        await client.notify("notifications/initialized")
        await client.notify("ide_connected", {"pid": os.getpid()})
        yield client


def texts(result: dict[str, Any]) -> list[str]:
    return [item["text"] for item in result["content"]]


def port_of(nvim: Neovim) -> int:
    return int(nvim.server_state()["port"])


def open_diff_args(path: Path, content: str) -> dict[str, Any]:
    return {
        "old_file_path": str(path),
        "new_file_path": str(path),
        "new_file_contents": content,
        "tab_name": f"✻ [Claude Code] {path.name} ⧉",
    }


def proposed_buffer(nvim: Neovim) -> int:
    return int(
        wait_for(
            lambda: nvim.lua(
                "for _, b in ipairs(vim.api.nvim_list_bufs()) do local d = vim.b[b].gemini_diff "
                "if d and d.role == 'proposed' and not d.orphaned then return b end end"
            ),
            20,
            what="the review's proposal buffer",
        )
    )


IDE_HEADER = "X-Claude-Code-Ide-Authorization"


class ClaudeLike:
    """A WebSocket MCP client shaped like claude's: requests answered out of order, notifications kept."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.notifications: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame.data)
            waiter = self._waiting.pop(message.get("id"), None) if "method" not in message else None
            if waiter is not None:
                waiter.set_result(message)
            elif "method" in message:
                self.notifications.append(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self._ids)
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[rid] = waiter
        await self.ws.send_str(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        )
        return await asyncio.wait_for(waiter, 60)

    def start(self, method: str, params: dict[str, Any]) -> asyncio.Task[dict[str, Any]]:
        return asyncio.get_running_loop().create_task(self.request(method, params))

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.ws.send_str(json.dumps({"jsonrpc": "2.0", "method": method, "params": params or {}}))

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = await self.request("tools/call", {"name": name, "arguments": arguments})
        result: dict[str, Any] = reply["result"]
        return result
