"""The HTTP edge: the aiohttp app whose one route, /mcp, leads into the SDK.

What is let in is `policy`'s to decide; where the SDK needs help, `sdk_compat`'s. This
module only puts them in order around the SDK's ASGI app (served through `asgi_bridge`; why
not under an ASGI server: docs/HTTP-EDGE.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import time
from collections.abc import Callable

from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from ..base import heap
from ..base.workspace import MCP_PATH
from ..core.sessions import ClientRegistry
from . import sdk_compat
from .asgi_bridge import serve_asgi
from .policy import (
    REQUEST_TIMEOUT_S,
    ConnectionGuard,
    Handler,
    admission,
    deny,
    read_body,
    refuse_protocol_version,
)

__all__ = ["MCP_PATH", "REQUEST_TIMEOUT_S", "BodyRefusals", "ConnectionGuard", "build_app"]

log = logging.getLogger(__name__)

# A body this big (an openDiff of a long file) leaves its buffers' memory to the C allocator, which
# keeps it (10 openDiff of a 50 000-line file: +11 MiB resident, for good). So once such a request is done,
# the free memory goes back to the system (heap.give_back).
_RELEASE_AFTER_BODY_BYTES = 256 << 10
_RELEASE_DELAY_S = 0.5  # after aiohttp has sent the answer and dropped the request


# Where a refused body names its file: gemini's openDiff (filePath), claude's (new_file_path), an
# agent's write or edit through its review gate hook (file_path).
_FILE_PATH = re.compile(rb'"(?:filePath|new_file_path|file_path)"\s*:\s*"((?:[^"\\]|\\.){1,4096})"')
_SAME_REFUSAL_S = 10.0  # an agent retrying the same request: said once


class BodyRefusals:
    """A body over `max_body_bytes` gets a 413 that only the agent sees, and the user would never
    learn why the edit they wait for did not come: they are told in Neovim too, who sent what, how
    big, and the setting that lets it in."""

    def __init__(
        self, registry: ClientRegistry, max_body_bytes: int, report: Callable[[str, str], None]
    ) -> None:
        self._registry = registry
        self._max_body_bytes = max_body_bytes
        self._report = report
        self._last: tuple[str, float] = ("", 0.0)

    def http(self, request: web.Request, size: int | None, start: bytes) -> None:
        agent = request.path.removeprefix("/hooks/") if request.path.startswith("/hooks/") else None
        who = (
            f"{agent}'s review gate"
            if agent
            else self._registry.name_of(request.headers.get("Mcp-Session-Id"))
        )
        self.refused(who, size, start)

    def refused(self, who: str, size: int | None, start: bytes = b"") -> None:
        found = _FILE_PATH.search(start)
        what = "a request"
        if found is not None:
            with contextlib.suppress(ValueError):
                what = "an edit of " + str(json.loads(b'"' + found.group(1) + b'"'))
        limit = _mib(self._max_body_bytes)
        how_big = _mib(size) if size is not None else f"more than {limit}"
        message = (
            f"{who} sent {what} of {how_big}, over max_body_bytes ({limit}): refused, "
            "it cannot be reviewed. Raise max_body_bytes to take edits this large."
        )
        log.warning("%s", message)
        now = time.monotonic()
        if message != self._last[0] or now - self._last[1] > _SAME_REFUSAL_S:
            self._report(message, "warn")
        self._last = (message, now)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size / 1024:.0f} KiB"


class McpRoute:
    """The /mcp handler: policy first, then the SDK, with `sdk_compat`'s repairs around it."""

    def __init__(
        self,
        manager: StreamableHTTPSessionManager,
        registry: ClientRegistry,
        max_body_bytes: int,
        connections: ConnectionGuard | None,
        refusals: BodyRefusals | None = None,
    ) -> None:
        self._manager = manager
        self._registry = registry
        self._max_body_bytes = max_body_bytes
        self._too_large = refusals.http if refusals is not None else None
        self._connections = connections
        self.sessions = sdk_compat.SessionControl(manager)
        self.in_flight = sdk_compat.InFlight()
        self._release: asyncio.TimerHandle | None = None
        self._opening = 0  # initialize requests without a session yet, being answered

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        refused = refuse_protocol_version(request)
        if refused is not None:
            return refused
        body = await read_body(request, self._max_body_bytes, self._too_large)
        if isinstance(body, web.Response):
            return body
        session_id = request.headers.get("Mcp-Session-Id")
        if session_id:
            self._registry.touch(session_id)
        if request.method == "POST" and not session_id and _is_initialize(body):
            response = await self._open_session(request, body)
        elif not (request.method == "POST" and session_id):
            response = await self._serve(request, body, session_id)
        else:
            pending = self.in_flight.begin(session_id, body)
            if isinstance(pending, web.Response):
                return pending
            connection = self._connections.of(request) if self._connections is not None else None
            abandoned = functools.partial(self.sessions.cancel_abandoned, session_id, pending)
            if connection is not None:
                connection.on_lost.append(abandoned)
            try:
                response = await self._serve(request, body, session_id)
            finally:
                if connection is not None and abandoned in connection.on_lost:
                    connection.on_lost.remove(abandoned)
                self.in_flight.end(session_id, pending)
        await self.sessions.forget_unborn_session(session_id, response)
        if len(body) >= _RELEASE_AFTER_BODY_BYTES:
            # aiohttp keeps a kept-alive connection's last request, its body with it, until the
            # next one comes: the connection closes instead (a 22 MB openDiff stayed, measured).
            response.force_close()
            self._release_memory_later()
        return sdk_compat.refine_malformed_reply(body, sdk_compat.drop_cancelled_reply(response))

    async def _open_session(self, request: web.Request, body: bytes) -> web.StreamResponse:
        """An initialize: room is made at the session cap (`ClientRegistry.make_room`); where
        none can be made, the SDK's own cap answers 503."""
        await self._registry.make_room(opening=self._opening)
        self._opening += 1
        try:
            response = await self._serve(request, body, None)
        finally:
            self._opening -= 1
        opened = response.headers.get("mcp-session-id")
        if opened and request.transport is None:
            # Its client left before the answer (it gave up waiting; the first ones wait for the
            # SDK's import, ServerInstance.wake) and never learned the session's id: no one can
            # use it, and without an event stream it would linger until the idle timeout.
            await self.sessions.end_session(opened)
            self._registry.remove(opened)
        return response

    def _release_memory_later(self) -> None:
        """Once, after a burst of big requests (a timer restarted by each): not per request."""
        if self._release is not None:
            self._release.cancel()
        self._release = asyncio.get_running_loop().call_later(_RELEASE_DELAY_S, heap.give_back)

    async def _serve(self, request: web.Request, body: bytes, session_id: str | None) -> web.StreamResponse:
        """The SDK's answer, telling the registry when the session's event stream opens and closes."""
        stream_opened = False

        def on_start(status: int) -> None:
            nonlocal stream_opened
            if request.method == "GET" and session_id and status == 200:
                stream_opened = True
                self._registry.stream_opened(session_id)

        try:
            return await serve_asgi(
                request,
                self._manager.handle_request,
                body,
                on_response_start=on_start,
                drop_headers=sdk_compat.headers_to_drop(request.method),
            )
        finally:
            if stream_opened and session_id:
                self._registry.stream_closed(session_id)


def _is_initialize(body: bytes) -> bool:
    """Only an initialize opens a session. (An initialize is small: a big body is not parsed.)"""
    if len(body) > 64 << 10 or b"initialize" not in body:
        return False
    return sdk_compat.method_of(body) == "initialize"


def _coroutine_function(handler: Handler) -> Handler:
    """aiohttp (3.14) deprecates route handlers that are not coroutine functions ("bare
    functions"), and an object whose __call__ is async (McpRoute, Claude's WebSocket route) is not one."""

    async def handle(request: web.Request) -> web.StreamResponse:
        return await handler(request)

    return handle


def build_app(
    *,
    token: str,
    port: int,
    max_body_bytes: int,
    manager: StreamableHTTPSessionManager,
    registry: ClientRegistry,
    connections: ConnectionGuard | None = None,
    websocket: Handler | None = None,
    hooks: dict[str, Handler] | None = None,
    refusals: BodyRefusals | None = None,
) -> web.Application:
    route = McpRoute(manager, registry, max_body_bytes, connections, refusals)
    registry.end_session = route.sessions.end_session  # also for clients that vanish without ending theirs
    registry.busy = route.in_flight.busy

    async def not_found(request: web.Request) -> web.Response:
        return deny(404, f"not found; the MCP endpoint is {MCP_PATH}")

    middleware = admission(
        token=token,
        port=port,
        max_body_bytes=max_body_bytes,
        connections=connections,
        too_large=refusals.http if refusals is not None else None,
    )
    app = web.Application(middlewares=[middleware], client_max_size=max_body_bytes, handler_args={})
    app.router.add_route("*", MCP_PATH, route.__call__)  # (see _coroutine_function)
    if websocket is not None:  # Claude Code's IDE channel (ws_transport.py), behind the same policy
        app.router.add_get("/", _coroutine_function(websocket))
    for path, handler in (hooks or {}).items():  # agents' command hooks (the review gate)
        app.router.add_post(path, handler)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
