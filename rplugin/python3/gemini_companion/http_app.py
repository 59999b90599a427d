"""The HTTP edge: who may talk to us, and the /mcp route into the SDK.

Checks, in this order, on every request (mirroring Gemini CLI's VS Code companion):
any `Origin` header → 403 (browsers never get in, CORS preflights included);
`Host` not `127.0.0.1:<port>`/`localhost:<port>` → 403 (DNS rebinding);
missing or wrong bearer token → 401 (constant-time compare); body over the cap → 413.
Before any of that, connections are bounded (`ConnectionGuard`): any local process may connect,
token or not, and must neither make the host run out of file descriptors nor lock real clients
out by holding sockets: a connection that brings no whole request soon is closed, and at the cap
the oldest one that never showed the token makes room for a newcomer (only connections that
authenticated are safe from that; when all are, newcomers get a 503).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

import aiohttp.http_exceptions
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION
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
# A connection must bring a whole request this soon after it opened or after its last answer
# (the head: aiohttp's keep-alive timer; the body: handle_mcp). Event streams and calls being
# answered are not bound by it. uvicorn, which MCP clients are used to, allows 5 s of idleness.
REQUEST_TIMEOUT_S = 10.0


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


class _Connection(asyncio.Protocol):
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
        self._open: dict[Any, _Connection] = {}  # by aiohttp's protocol, oldest first
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
        connection = _Connection(self, inner)
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

    def of(self, request: web.BaseRequest) -> _Connection | None:
        return self._open.get(request.protocol)


def _deny(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def _jsonrpc_error(status: int, code: int, message: str, data: Any = None) -> web.Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return web.json_response({"jsonrpc": "2.0", "id": None, "error": error}, status=status)


def _is_error_reply(response: web.StreamResponse) -> bool:
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return False
    try:
        message = json.loads(response.body)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return False
    return isinstance(message, dict) and "error" in message and "result" not in message


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
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return response
    if isinstance(message, dict) and (message.get("error") or {}).get("code") == REQUEST_CANCELLED:
        return web.Response(status=202)
    return response


def _request_id(body: bytes) -> str | None:
    """The id of a JSON-RPC request, as the SDK keys it (`str(id)`); None for anything else."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    rid = message.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    return str(rid)


class _Pending:
    """A POST being answered in a session. Its id is read only when another request of the
    same session is in flight too: most POSTs are alone, and parsing a 10 MB openDiff twice
    (here and in the SDK) would cost ~60 ms of the loop."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    @functools.cached_property
    def request_id(self) -> str | None:
        return _request_id(self.body)

    def raw_request_id(self) -> str | int | None:
        """The id as sent (the SDK matches a cancellation's requestId by value and type)."""
        try:
            message = json.loads(self.body)
        except (ValueError, RecursionError):
            return None
        rid = message.get("id") if isinstance(message, dict) and "method" in message else None
        return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def _shape_problem(body: bytes) -> tuple[int, str]:
    """Why a body that parsed as JSON is not a JSON-RPC message: (code, short reason)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return INVALID_REQUEST, "not a JSON-RPC message"
    if isinstance(message, list):
        return INVALID_REQUEST, "batches are not supported: send one JSON-RPC message per request"
    if not isinstance(message, dict):
        return INVALID_REQUEST, "a JSON-RPC message is a JSON object"
    if message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'jsonrpc must be "2.0"'
    if "method" in message and not isinstance(message["method"], str):
        return INVALID_REQUEST, "method must be a string"
    rid = message.get("id")
    if "method" in message and "id" in message and (isinstance(rid, bool) or not isinstance(rid, str | int)):
        return INVALID_REQUEST, "id must be a string or an integer"  # (a response may have id null)
    if "params" in message and not isinstance(message["params"], dict):
        return INVALID_PARAMS, "params must be an object"
    return INVALID_REQUEST, "not a JSON-RPC request, notification or response"


def _refine_reply(body: bytes, response: web.StreamResponse) -> web.StreamResponse:
    """Where the SDK's answer to a malformed message is wrong, answer as JSON-RPC says:
    - it answers a message that is no JSON-RPC message with -32602 and pydantic's whole report
      (~1 KB, echoing the input): -32600 (Invalid Request) with a short reason instead;
    - it takes a request whose id is not a string or an integer (null, 1.5, true, {}, [])
      for a notification and answers 202, so the client waits forever: -32600 instead."""
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return response
    if response.status == 400 and b'"message":"Validation error:' in response.body[:200]:
        code, reason = _shape_problem(body)
        kind = "Invalid params" if code == INVALID_PARAMS else "Invalid Request"
        return _jsonrpc_error(400, code, f"{kind}: {reason}")
    if response.status == 202 and b'"id"' in body:
        code, reason = _shape_problem(body)
        if reason.startswith("id must be"):
            return _jsonrpc_error(400, code, f"Invalid Request: {reason}")
    return response


def build_app(
    *,
    token: str,
    port: int,
    max_body_bytes: int,
    manager: StreamableHTTPSessionManager,
    registry: ClientRegistry,
    connections: ConnectionGuard | None = None,
) -> web.Application:
    expected = f"Bearer {token}".encode()
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    # The POSTs being answered, per session. The SDK keeps one answer slot per str(id) and
    # session: a second request with the same id overwrites the first one's, which then waits
    # forever and keeps its session from ever expiring.
    in_flight: dict[str, list[_Pending]] = {}

    async def internal_request(method: str, session_id: str, body: bytes = b"") -> None:
        """A request of our own into a session, as if its client had sent it."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": MCP_PATH,
            "raw_path": MCP_PATH.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"mcp-session-id", session_id.encode("latin-1")),
                (b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream"),
            ],
            "client": None,
            "server": None,
            "state": {},
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(_message: Any) -> None:
            return None

        await manager.handle_request(scope, receive, send)

    async def end_session(session_id: str) -> None:
        """Close a session that can no longer be used (its initialize failed, or its client
        vanished), so it stops counting towards max_sessions and its reviews are answered."""
        await internal_request("DELETE", session_id)

    cancelling: set[asyncio.Task[None]] = set()

    def cancel_abandoned(session_id: str, pending: _Pending) -> None:
        """The client of a request went away before its answer: cancel the request as MCP's
        notifications/cancelled would, so its handler and its Lua call stop, and nothing more
        waits for an answer nobody will read."""
        rid = pending.raw_request_id()
        if rid is None:
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "the client disconnected"},
        }
        task = asyncio.ensure_future(internal_request("POST", session_id, json.dumps(note).encode()))
        cancelling.add(task)
        task.add_done_callback(cancelling.discard)

    registry.end_session = end_session  # also for clients that vanish without ending theirs

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
        connection = connections.of(request) if connections is not None else None
        if connection is not None:
            connection.authenticated = True
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
            body = b""
            if request.method == "POST":
                body = await asyncio.wait_for(request.read(), REQUEST_TIMEOUT_S)
        except (TimeoutError, asyncio.TimeoutError):
            late = _deny(408, f"the request body did not arrive within {REQUEST_TIMEOUT_S:g} s")
            late.force_close()  # the rest of that body must not be read as the next request
            return late
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
        if session_id:
            registry.touch(session_id)
        stream_opened = False
        pending = None
        connection = connections.of(request) if connections is not None else None
        abandoned: Callable[[], None] | None = None
        if request.method == "POST" and session_id:
            pending = _Pending(body)
            neighbours = in_flight.setdefault(session_id, [])
            rid = pending.request_id if neighbours else None
            if rid is not None and any(other.request_id == rid for other in neighbours):
                return _jsonrpc_error(
                    400,
                    INVALID_REQUEST,
                    f"Invalid Request: id {rid[:40]!r} is already used by a request still in progress",
                )
            neighbours.append(pending)
            if connection is not None:
                abandoned = functools.partial(cancel_abandoned, session_id, pending)
                connection.on_lost.append(abandoned)

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
        finally:
            if connection is not None and abandoned in connection.on_lost:
                connection.on_lost.remove(abandoned)
            if pending is not None and session_id:
                neighbours = in_flight[session_id]
                neighbours.remove(pending)
                if not neighbours:
                    del in_flight[session_id]
            if stream_opened and session_id:
                registry.stream_closed(session_id)
        opened = response.headers.get("mcp-session-id") if session_id is None else None
        if (
            opened
            and isinstance(response, web.Response)
            and (response.status >= 400 or _is_error_reply(response))
        ):
            # No session came of this request (a refused one, or a failed initialize).
            del response.headers["mcp-session-id"]
            if response.status < 400:
                await end_session(opened)
        return _refine_reply(body, _drop_cancelled_reply(response))

    async def not_found(request: web.Request) -> web.Response:
        return _deny(404, f"not found; the MCP endpoint is {MCP_PATH}")

    app = web.Application(middlewares=[guard], client_max_size=max_body_bytes, handler_args={})
    app.router.add_route("*", MCP_PATH, handle_mcp)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
