"""Several MCP tool calls in one session of the official Python SDK client."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from typing import Any

from tests.support.helpers import mcp_client


def call_tools(disc: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each call, in order, in one session."""

    async def go() -> list[tuple[bool, str]]:
        async with mcp_client(disc.url, disc.token) as client:
            out = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                out.append((bool(result.is_error), result.content[0].text if result.content else ""))
            return out

    return asyncio.run(go())


class ToolSession:
    """One session of the official Python SDK client kept open across calls, for a test that makes
    many: its own thread runs the event loop, and one task holds the client's context (anyio's task
    groups are left in the task that entered them)."""

    def __init__(self, url: str, token: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tool-session", daemon=True)
        self._thread.start()
        self._client: Any = None
        self._closing = asyncio.Event()
        opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(url, token, opened), self._loop)
        opened.result(60)

    async def _hold(self, url: str, token: str, opened: concurrent.futures.Future[None]) -> None:
        try:
            async with mcp_client(url, token) as client:
                self._client = client
                opened.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """The CallToolResult of one call (safe from several threads at once)."""
        return asyncio.run_coroutine_threadsafe(self._client.call_tool(name, args), self._loop).result(60)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._closing.set)
        with contextlib.suppress(Exception):  # a server gone already ends the session its own way
            self._held.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
