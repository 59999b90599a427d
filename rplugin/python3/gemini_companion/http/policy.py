"""Who may talk to us, how much, for how long: the HTTP edge's policy.

Checks, in this order, on every request (mirroring Gemini CLI's VS Code companion):
any `Origin` header → 403 (browsers never get in, CORS preflights included);
`Host` not `127.0.0.1:<port>`/`localhost:<port>` → 403 (DNS rebinding);
missing or wrong bearer token (or Claude Code's `X-Claude-Code-Ide-Authorization`) → 401
(constant-time compare); body over the cap → 413;
an `MCP-Protocol-Version` we do not speak → 400; a body that does not arrive in time → 408.
Before any of that, connections are bounded (`ConnectionGuard`): any local process may connect,
token or not, and must neither make the host run out of file descriptors nor lock real clients
out by holding sockets: a connection that brings no whole request soon is closed, and at the cap
the oldest one that never showed the token makes room for a newcomer (only connections that
authenticated are safe from that; when all are, newcomers get a 503).

Nothing here knows the MCP SDK; what works around it lives in `sdk_compat`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp.http_exceptions
from aiohttp import web
from aiohttp.typedefs import Middleware
from aiohttp.web_protocol import RequestPayloadError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

log = logging.getLogger(__name__)

# A connection must bring a whole request this soon after it opened or after its last answer
# (the head: aiohttp's keep-alive timer; the body: `read_body`). Event streams and calls being
# answered are not bound by it. uvicorn, which MCP clients are used to, allows 5 s of idleness.
REQUEST_TIMEOUT_S = 10.0
IDE_AUTH_HEADER = "X-Claude-Code-Ide-Authorization"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def deny(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def jsonrpc_error(status: int, code: int, message: str, data: Any = None) -> web.Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return web.json_response({"jsonrpc": "2.0", "id": None, "error": error}, status=status)


class _Refusal(asyncio.Protocol):
    """A connection past the cap: a short 503, then closed."""

    BODY = b'{"error":"too many connections to this server"}'
    ANSWER = (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)
    )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self.ANSWER)
        transport.close()


class Connection(asyncio.Protocol):
    """aiohttp's protocol for one connection, wrapped so the guard learns when it goes (to
    cancel what its requests started) and remembers whether it ever showed the token."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self._guard = guard
        self.inner = inner
        self.authenticated = False
        self.on_lost: list[Callable[[], None]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard.forget(self.inner)
        self.inner.connection_lost(exc)
        callbacks, self.on_lost = self.on_lost, []
        for callback in callbacks:
            callback()


class ConnectionGuard:
    """The listening socket's protocol factory: at most `limit` connections; at the cap the
    oldest one that never authenticated is closed for the newcomer, else the newcomer gets a 503."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.server: web.Server | None = None  # set once the runner made it
        self._open: dict[Any, Connection] = {}  # by aiohttp's protocol, oldest first
        self._warned = False

    def factory(self) -> asyncio.Protocol:
        assert self.server is not None
        if len(self._open) >= self.limit and not self._evict_unauthenticated():
            if not self._warned:  # once per burst: a flood must not flood the log too
                self._warned = True
                log.warning("%d connections open: refusing new ones until some close", self.limit)
            return _Refusal()
        self._warned = False
        inner = self.server()
        connection = Connection(self, inner)
        self._open[inner] = connection
        return connection

    def _evict_unauthenticated(self) -> bool:
        for inner, connection in self._open.items():
            if not connection.authenticated:
                self.forget(inner)
                inner.force_close()
                return True
        return False

    def forget(self, inner: Any) -> None:
        self._open.pop(inner, None)

    def of(self, request: web.BaseRequest) -> Connection | None:
        return self._open.get(request.protocol)


# How much of a refused body is read to say what it was: a JSON-RPC request names its method, tool
# and file (`filePath`) before the big text, in every client's JSON (the TypeScript SDK's too).
_BODY_START_BYTES = 4096

# Told about a body over the cap: (the request, its declared size or None, its first bytes).
TooLarge = Callable[[web.Request, int | None, bytes], None]


def admission(
    *,
    token: str,
    port: int,
    max_body_bytes: int,
    connections: ConnectionGuard | None,
    too_large: TooLarge | None = None,
) -> Middleware:
    """The aiohttp middleware that lets a request in, or answers it with why not."""
    expected = f"Bearer {token}".encode()
    expected_ide = token.encode()
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    @web.middleware
    async def admit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if "Origin" in request.headers:
            return deny(403, "requests from browsers (with an Origin header) are not accepted")
        if request.headers.get("Host", "").lower() not in allowed_hosts:
            return deny(403, "invalid Host header")
        supplied = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        ide_token = request.headers.get(IDE_AUTH_HEADER)  # Claude Code's WebSocket sends the bare token
        if not (
            hmac.compare_digest(supplied, expected)
            if ide_token is None
            else hmac.compare_digest(ide_token.encode("utf-8", "surrogateescape"), expected_ide)
        ):
            resp = deny(401, "missing or invalid bearer token")
            resp.headers["WWW-Authenticate"] = "Bearer"
            return resp
        connection = connections.of(request) if connections is not None else None
        if connection is not None:
            connection.authenticated = True
        length = request.content_length
        if length is not None and length > max_body_bytes:
            if too_large is not None:
                too_large(request, length, await _body_start(request))
            return deny(413, f"request body larger than {max_body_bytes} bytes")
        return await handler(request)

    return admit


def refuse_protocol_version(request: web.Request) -> web.Response | None:
    """A 400 for an `MCP-Protocol-Version` outside the handshake era, else None.

    The stateless 2026 era has no GET stream, so IDE notifications could never reach such a
    client; refusing it makes mcp 2.x clients in `auto` mode use the handshake."""
    version = request.headers.get("MCP-Protocol-Version")
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    return jsonrpc_error(
        400,
        UNSUPPORTED_PROTOCOL_VERSION,
        f"unsupported MCP-Protocol-Version {version[:40]!r}",
        {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version[:40]},
    )


async def _body_start(request: web.Request) -> bytes:
    """The first bytes of a body that will not be read, as far as they came within a second."""
    try:
        return await asyncio.wait_for(request.content.read(_BODY_START_BYTES), 1.0)
    except Exception:
        return b""


async def read_body(
    request: web.Request, max_body_bytes: int, too_large: TooLarge | None = None
) -> bytes | web.Response:
    """The whole body of a POST (b"" for other methods), or the answer to give instead."""
    if request.method != "POST":
        return b""
    try:
        if request.content.is_eof():  # the whole body came with the head: no timer (a task) needed
            return await request.read()
        return await asyncio.wait_for(request.read(), REQUEST_TIMEOUT_S)
    except (TimeoutError, asyncio.TimeoutError):
        late = deny(408, f"the request body did not arrive within {REQUEST_TIMEOUT_S:g} s")
        late.force_close()  # the rest of that body must not be read as the next request
        return late
    except web.HTTPRequestEntityTooLarge:  # (a body of no declared size: chunked)
        if too_large is not None:
            too_large(request, None, b"")
        return deny(413, f"request body larger than {max_body_bytes} bytes")
    except (
        RequestPayloadError,
        aiohttp.http_exceptions.HttpProcessingError,
        ValueError,
        ConnectionError,
    ) as exc:
        # An undecodable Content-Encoding or a body cut short: the client's fault, said briefly.
        log.debug("unreadable request body: %s", exc)
        return deny(400, "the request body could not be read")
