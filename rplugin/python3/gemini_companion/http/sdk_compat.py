"""Where the MCP SDK (and the libraries under it) misbehave, and what we do about it.

Each workaround names what upstream does wrong and the version it was written against:
mcp 2.3.0, sse-starlette 3.7.0, starlette 1.10.0. Each has a canary in
tests/unit/test_sdk_compat.py that drives the upstream component WITHOUT the workaround and
asserts the misbehaviour is still there: when a canary fails after an upgrade, upstream fixed
it, and the workaround (and its canary) should go.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from ..base.workspace import MCP_PATH
from .policy import jsonrpc_error

REQUEST_CANCELLED = -32800


class ToolsListChangedServer(Server[Any]):
    """mcp 2.3: the session manager asks the server for its capabilities without arguments, and
    the low-level `Server` then never advertises `tools.listChanged` (upstream TODO(L53)); Lua
    may register tools at any time, so clients must be told to re-list."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def set_event_stream_keepalive(seconds: int) -> None:
    """sse-starlette 3.7 / mcp 2.3: the SDK builds every `EventSourceResponse` without a `ping`
    argument and offers no setting for it, so the keep-alive interval can only be set through
    the class default, process-wide. Gemini CLI drops an event stream silent for 300 s."""
    from sse_starlette import EventSourceResponse

    EventSourceResponse.DEFAULT_PING_INTERVAL = seconds


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    """mcp 2.3: the low-level runner hands handlers a `ServerRequestContext` whose session keeps
    its `Connection` private (`Context.connection` exists but is not built yet); the connection
    is the channel for our notifications and carries the session id and exit stack."""
    return ctx.session._connection


def headers_to_drop(method: str) -> frozenset[bytes]:
    """mcp 2.3 (`_replay_events`): given `Last-Event-ID` without an event store (we keep none,
    so there is nothing to replay) the SDK answers a GET with nothing at all, and the client
    waits forever. Without the header a GET opens a fresh stream, as the TypeScript SDK does."""
    return frozenset({b"last-event-id"}) if method == "GET" else frozenset()


def drop_cancelled_reply(response: web.StreamResponse) -> web.StreamResponse:
    """mcp 2.3 (JSON response mode): a request the client cancelled still gets an answer
    (-32800), though MCP says it gets none; clients then report "a response for an unknown
    message ID" (Gemini CLI even drops the connection). Answer the POST with an empty 202."""
    if not isinstance(response, web.Response) or response.status != 200:
        return response
    body = response.body
    if not isinstance(body, bytes) or len(body) > 512 or b"-32800" not in body:
        return response
    message = _parse(body)
    if isinstance(message, dict) and (message.get("error") or {}).get("code") == REQUEST_CANCELLED:
        return web.Response(status=202)
    return response


def refine_malformed_reply(body: bytes, response: web.StreamResponse) -> web.StreamResponse:
    """mcp 2.3 answers some malformed messages wrongly; answer as JSON-RPC says:
    - a message that is no JSON-RPC message gets -32602 and pydantic's whole report (~1 KB,
      echoing the input): -32600 (Invalid Request) with a short reason instead;
    - a request whose id is not a string or an integer (null, 1.5, true, {}, []) is taken for
      a notification and answered 202, so the client waits forever: -32600 instead."""
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return response
    if response.status == 400 and b'"message":"Validation error:' in response.body[:200]:
        code, reason = _shape_problem(body)
        kind = "Invalid params" if code == INVALID_PARAMS else "Invalid Request"
        return jsonrpc_error(400, code, f"{kind}: {reason}")
    if response.status == 202 and b'"id"' in body:
        code, reason = _shape_problem(body)
        if reason.startswith("id must be"):
            return jsonrpc_error(400, code, f"Invalid Request: {reason}")
    return response


_UNPARSABLE = object()


def _parse(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return _UNPARSABLE


def method_of(body: bytes) -> str | None:
    """The method of the JSON-RPC request or notification in `body`, if it is one."""
    message = _parse(body)
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


def _request_id(message: Any) -> str | int | None:
    """The id of a JSON-RPC request as sent; None for anything else."""
    rid = message.get("id") if isinstance(message, dict) and "method" in message else None
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def _shape_problem(body: bytes) -> tuple[int, str]:
    """Why a body that parsed as JSON is not a JSON-RPC message: (code, short reason)."""
    message = _parse(body)
    if message is _UNPARSABLE:
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


class Pending:
    """A POST being answered in a session. Its id is read only when another request of the
    same session is in flight too: most POSTs are alone, and parsing a 10 MB openDiff twice
    (here and in the SDK) would cost ~60 ms of the loop."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    @functools.cached_property
    def request_id(self) -> str | None:
        """The id as the SDK keys it (`str(id)`)."""
        rid = _request_id(_parse(self.body))
        return None if rid is None else str(rid)

    def raw_request_id(self) -> str | int | None:
        """The id as sent (the SDK matches a cancellation's requestId by value and type)."""
        return _request_id(_parse(self.body))


class InFlight:
    """mcp 2.3 keeps one answer slot per `str(id)` and session: a second request with the id of
    one still in progress overwrites the first one's slot, which then waits forever and keeps
    its session from ever expiring. We refuse the second request instead (-32600)."""

    def __init__(self) -> None:
        self._by_session: dict[str, list[Pending]] = {}

    def begin(self, session_id: str, body: bytes) -> Pending | web.Response:
        pending = Pending(body)
        neighbours = self._by_session.setdefault(session_id, [])
        rid = pending.request_id if neighbours else None
        if rid is not None and any(other.request_id == rid for other in neighbours):
            return jsonrpc_error(
                400,
                INVALID_REQUEST,
                f"Invalid Request: id {rid[:40]!r} is already used by a request still in progress",
            )
        neighbours.append(pending)
        return pending

    def busy(self, session_id: str) -> bool:
        return session_id in self._by_session

    def end(self, session_id: str, pending: Pending) -> None:
        neighbours = self._by_session[session_id]
        neighbours.remove(pending)
        if not neighbours:
            del self._by_session[session_id]


class SessionControl:
    """mcp 2.3's session manager has no API to end a session or cancel a request from the
    server side; we send its transport what a client would (a DELETE, a
    notifications/cancelled), as if the session's client had sent it."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self._manager = manager
        self._cancelling: set[asyncio.Future[None]] = set()

    async def _request(self, method: str, session_id: str, body: bytes = b"") -> None:
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

        await self._manager.handle_request(scope, receive, send)

    async def end_session(self, session_id: str) -> None:
        """Close a session that can no longer be used (its initialize failed, or its client
        vanished), so it stops counting towards max_sessions and its reviews are answered."""
        await self._request("DELETE", session_id)

    def cancel_abandoned(self, session_id: str, pending: Pending) -> None:
        """mcp 2.3 (JSON response mode) does not notice that the client of a request went away:
        the handler (and its Lua call) runs on for an answer nobody will read. Cancel it as
        MCP's notifications/cancelled would."""
        rid = pending.raw_request_id()
        if rid is None:
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "the client disconnected"},
        }
        task = asyncio.ensure_future(self._request("POST", session_id, json.dumps(note).encode()))
        self._cancelling.add(task)
        task.add_done_callback(self._cancelling.discard)

    async def forget_unborn_session(self, session_id: str | None, response: web.StreamResponse) -> None:
        """mcp 2.3 hands out a session id with a refused request or a failed `initialize` (an
        error reply, status 200) and keeps that session: no session came of it, so the id is
        taken off the answer and the session ended."""
        opened = response.headers.get("mcp-session-id") if session_id is None else None
        if not opened or not isinstance(response, web.Response):
            return
        if response.status >= 400:
            del response.headers["mcp-session-id"]
        elif _is_error_reply(response):
            del response.headers["mcp-session-id"]
            await self.end_session(opened)


def _is_error_reply(response: web.Response) -> bool:
    if not isinstance(response.body, bytes):
        return False
    message = _parse(response.body)
    return isinstance(message, dict) and "error" in message and "result" not in message
