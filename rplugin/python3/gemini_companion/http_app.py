"""The HTTP edge: the aiohttp app whose one route, /mcp, leads into the SDK.

What is let in is `http_policy`'s to decide; where the SDK needs help, `sdk_compat`'s. This
module only puts them in order around the SDK's ASGI app (served through `asgi_bridge`; why
not under an ASGI server: docs/HTTP-EDGE.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from . import sdk_compat
from .asgi_bridge import serve_asgi
from .http_policy import (
    REQUEST_TIMEOUT_S,
    ConnectionGuard,
    admission,
    deny,
    read_body,
    refuse_protocol_version,
)
from .sdk_compat import MCP_PATH
from .sessions import ClientRegistry

__all__ = ["MCP_PATH", "REQUEST_TIMEOUT_S", "ConnectionGuard", "build_app"]


def build_app(
    *,
    token: str,
    port: int,
    max_body_bytes: int,
    manager: StreamableHTTPSessionManager,
    registry: ClientRegistry,
    connections: ConnectionGuard | None = None,
) -> web.Application:
    sessions = sdk_compat.SessionControl(manager)
    in_flight = sdk_compat.InFlight()
    registry.end_session = sessions.end_session  # also for clients that vanish without ending theirs

    async def handle_mcp(request: web.Request) -> web.StreamResponse:
        refused = refuse_protocol_version(request)
        if refused is not None:
            return refused
        body = await read_body(request, max_body_bytes)
        if isinstance(body, web.Response):
            return body
        session_id = request.headers.get("Mcp-Session-Id")
        if session_id:
            registry.touch(session_id)
        pending: sdk_compat.Pending | None = None
        connection = connections.of(request) if connections is not None else None
        abandoned: Callable[[], None] | None = None
        if request.method == "POST" and session_id:
            began = in_flight.begin(session_id, body)
            if isinstance(began, web.Response):
                return began
            pending = began
            if connection is not None:
                abandoned = functools.partial(sessions.cancel_abandoned, session_id, pending)
                connection.on_lost.append(abandoned)
        stream_opened = False

        def on_start(status: int) -> None:
            nonlocal stream_opened
            if request.method == "GET" and session_id and status == 200:
                stream_opened = True
                registry.stream_opened(session_id)

        try:
            response = await serve_asgi(
                request,
                manager.handle_request,
                body,
                on_response_start=on_start,
                drop_headers=sdk_compat.headers_to_drop(request.method),
            )
        finally:
            if connection is not None and abandoned in connection.on_lost:
                connection.on_lost.remove(abandoned)
            if pending is not None and session_id:
                in_flight.end(session_id, pending)
            if stream_opened and session_id:
                registry.stream_closed(session_id)
        await sessions.forget_unborn_session(session_id, response)
        return sdk_compat.refine_malformed_reply(body, sdk_compat.drop_cancelled_reply(response))

    async def not_found(request: web.Request) -> web.Response:
        return deny(404, f"not found; the MCP endpoint is {MCP_PATH}")

    middleware = admission(token=token, port=port, max_body_bytes=max_body_bytes, connections=connections)
    app = web.Application(middlewares=[middleware], client_max_size=max_body_bytes, handler_args={})
    app.router.add_route("*", MCP_PATH, handle_mcp)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
