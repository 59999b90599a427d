"""MCP over a WebSocket, on the same aiohttp server and port as /mcp: Claude Code's IDE channel.

Only a transport: each text frame is one JSON-RPC message, handed to the official SDK's server loop
(`mcp.server.runner.serve_loop`, the loop `Server.run` drives) through anyio memory streams; the
SDK answers `initialize`, `tools/list`, `tools/call` exactly as over HTTP. Who may connect (Origin,
Host, the token) is `policy.admission`'s to decide before this handler runs; here only what a
WebSocket adds: the `mcp` subprotocol and the session cap.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from aiohttp import web
from aiohttp.http import (  # not `from aiohttp`: that runs its package __init__ (lean_import.import_lean)
    WSCloseCode,
    WSMsgType,
)
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from .policy import deny

log = logging.getLogger(__name__)

SUBPROTOCOL = "mcp"
# Without traffic for this long a ping goes out; a peer that never answers is dropped (a claude
# killed with SIGKILL behind a NAT-less loopback still closes the socket, this covers a frozen one).
_HEARTBEAT_S = 30.0


class WebSocketRoute:
    """`GET /` upgraded to a WebSocket: one MCP session per connection, served by `server`."""

    def __init__(
        self,
        server: Server[Any],
        *,
        max_message_bytes: int,
        may_open_session: Callable[[], Awaitable[bool]],
        too_large: Callable[[str], None] = lambda _session_id: None,
    ) -> None:
        self._server = server
        self._max_message_bytes = max_message_bytes
        self._may_open_session = may_open_session
        self.too_large = too_large  # told the session id of a peer whose message was over the cap
        self._sockets: dict[str, web.WebSocketResponse] = {}  # by MCP session id

    @property
    def session_ids(self) -> set[str]:
        """The MCP session ids of the open WebSocket sessions."""
        return set(self._sockets)

    async def close_all(self, timeout_s: float) -> None:
        """Close every WebSocket (going away), waiting at most `timeout_s` for the peers' goodbyes."""
        closing = [
            asyncio.ensure_future(ws.close(code=WSCloseCode.GOING_AWAY, message=b"Neovim's server stops"))
            for ws in list(self._sockets.values())
        ]
        if closing:
            await asyncio.wait(closing, timeout=timeout_s)

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(
            protocols=(SUBPROTOCOL,),
            max_msg_size=self._max_message_bytes,
            heartbeat=_HEARTBEAT_S,
            autoping=True,
        )
        ready = ws.can_prepare(request)
        if not ready.ok:
            return deny(
                400, "this address speaks MCP over a WebSocket (subprotocol mcp); HTTP clients use /mcp"
            )
        if ready.protocol != SUBPROTOCOL:
            return deny(400, f"the WebSocket subprotocol must be {SUBPROTOCOL!r}")
        if not await self._may_open_session():
            return deny(503, "too many MCP sessions (setting max_sessions)")
        await ws.prepare(request)
        session_id = secrets.token_hex(16)
        self._sockets[session_id] = ws
        try:
            await self._serve(ws, session_id)
        finally:
            self._sockets.pop(session_id, None)
            await ws.close()
        return ws

    async def _serve(self, ws: web.WebSocketResponse, session_id: str) -> None:
        to_server, server_reads = create_context_streams[SessionMessage | Exception](16)
        server_writes, to_client = create_context_streams[SessionMessage](16)

        async def run_server() -> None:
            async with self._server.lifespan(self._server) as lifespan_state:
                await serve_loop(
                    self._server,
                    server_reads,
                    server_writes,
                    lifespan_state=lifespan_state,
                    session_id=session_id,
                )

        async def write_frames() -> None:
            async with to_client:
                async for message in to_client:
                    if ws.closed:
                        break
                    await ws.send_str(message.message.model_dump_json(by_alias=True, exclude_unset=True))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_server)
            tasks.start_soon(write_frames)
            async with to_server:
                if await _read_frames(ws, to_server) == WSCloseCode.MESSAGE_TOO_BIG:
                    self.too_large(session_id)
            # The peer is gone: nothing can reach it any more, so nothing of its session goes on
            # (a review waiting for the user is released through the session's end).
            tasks.cancel_scope.cancel()


async def _read_frames(ws: web.WebSocketResponse, to_server: Any) -> int | None:
    """Each frame to the SDK as a message (or, malformed, as the error the SDK answers); the
    code of the error that ended the socket, if one did."""
    async for frame in ws:
        if frame.type == WSMsgType.TEXT:
            data: str | bytes = frame.data
        elif frame.type == WSMsgType.BINARY:
            data = frame.data
        else:  # ERROR (e.g. a frame over the size cap): aiohttp closes the socket
            log.info("WebSocket closed: %s", ws.exception() or frame.data)
            code: int | None = getattr(frame.data, "code", None)
            return code
        try:
            message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
        except ValueError as exc:
            await to_server.send(exc)
            continue
        await to_server.send(SessionMessage(message))
    return None
