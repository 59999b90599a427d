"""The HTTP edge: who may talk to us, and the /mcp route into the SDK.

Checks, in this order, on every request (mirroring Gemini CLI's VS Code companion):
any `Origin` header → 403 (browsers never get in, CORS preflights included);
`Host` not `127.0.0.1:<port>`/`localhost:<port>` → 403 (DNS rebinding);
missing or wrong bearer token → 401 (constant-time compare); body over the cap → 413.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

import aiohttp.http_exceptions
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from .asgi_bridge import serve_asgi
from .sessions import ClientRegistry

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
REQUEST_CANCELLED = -32800
# We keep no event store, so there is nothing to replay; given Last-Event-ID anyway the SDK
# (mcp 2.3 `_replay_events`) answers nothing at all. Without it a GET opens a fresh stream,
# as the TypeScript SDK's server does.
_NO_REPLAY = frozenset({b"last-event-id"})


def _deny(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def _jsonrpc_error(status: int, code: int, message: str, data: Any = None) -> web.Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return web.json_response({"jsonrpc": "2.0", "id": None, "error": error}, status=status)


def _drop_cancelled_reply(response: web.StreamResponse) -> web.StreamResponse:
    """MCP: a request the client cancelled gets no response. The SDK still answers it (-32800)
    in JSON mode, and clients then report "a response for an unknown message ID" (Gemini CLI
    even drops the connection). Answer the POST with an empty 202 instead."""
    if not isinstance(response, web.Response) or response.status != 200:
        return response
    body = response.body
    if not isinstance(body, bytes) or len(body) > 512 or b"-32800" not in body:
        return response
    try:
        message = json.loads(body)
    except ValueError:
        return response
    if isinstance(message, dict) and (message.get("error") or {}).get("code") == REQUEST_CANCELLED:
        return web.Response(status=202)
    return response


def build_app(
    *,
    token: str,
    port: int,
    max_body_bytes: int,
    manager: StreamableHTTPSessionManager,
    registry: ClientRegistry,
) -> web.Application:
    expected = f"Bearer {token}".encode()
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if "Origin" in request.headers:
            return _deny(403, "requests from browsers (with an Origin header) are not accepted")
        if request.headers.get("Host", "").lower() not in allowed_hosts:
            return _deny(403, "invalid Host header")
        supplied = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(supplied, expected):
            resp = _deny(401, "missing or invalid bearer token")
            resp.headers["WWW-Authenticate"] = "Bearer"
            return resp
        length = request.content_length
        if length is not None and length > max_body_bytes:
            return _deny(413, f"request body larger than {max_body_bytes} bytes")
        response: web.StreamResponse = await handler(request)
        return response

    async def handle_mcp(request: web.Request) -> web.StreamResponse:
        version = request.headers.get("MCP-Protocol-Version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # The stateless 2026 era has no GET stream, so IDE notifications could never reach
            # such a client; refusing it makes mcp 2.x clients in `auto` mode use the handshake.
            return _jsonrpc_error(
                400,
                UNSUPPORTED_PROTOCOL_VERSION,
                f"unsupported MCP-Protocol-Version {version[:40]!r}",
                {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version[:40]},
            )
        try:
            body = await request.read() if request.method == "POST" else b""
        except web.HTTPRequestEntityTooLarge:
            return _deny(413, f"request body larger than {max_body_bytes} bytes")
        except (
            RequestPayloadError,
            aiohttp.http_exceptions.HttpProcessingError,
            ValueError,
            ConnectionError,
        ) as exc:
            # An undecodable Content-Encoding or a body cut short: the client's fault, said briefly.
            log.debug("unreadable request body: %s", exc)
            return _deny(400, "the request body could not be read")
        session_id = request.headers.get("Mcp-Session-Id")
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
                drop_headers=_NO_REPLAY if request.method == "GET" else frozenset(),
            )
            return _drop_cancelled_reply(response)
        finally:
            if stream_opened and session_id:
                registry.stream_closed(session_id)

    async def not_found(request: web.Request) -> web.Response:
        return _deny(404, f"not found; the MCP endpoint is {MCP_PATH}")

    app = web.Application(middlewares=[guard], client_max_size=max_body_bytes, handler_args={})
    app.router.add_route("*", MCP_PATH, handle_mcp)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
