"""Serve an ASGI app (the MCP SDK's Streamable-HTTP manager) from an aiohttp handler.

Behaves like uvicorn where the SDK depends on it: the body is read up front; after it,
`receive()` blocks until the client goes away and then reports `http.disconnect`; writes after
a disconnect are dropped. (aiohttp-asgi 0.7 does not: its `receive()` returns at once after the
body, so sse-starlette's disconnect listener spins at 100 % CPU.) Why aiohttp and this shim
rather than an ASGI server: docs/HTTP-EDGE.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

# How often a blocked receive() looks at the socket; bounds how late a gone client is noticed.
_DISCONNECT_POLL_S = 0.2


def _gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


# One function of ~90 lines on purpose: `receive` and `send` are the two halves of one exchange
# and share its few variables (body given, response begun, finished); split up, those would
# become attributes that both halves mutate, which reads worse. Its complexity is theirs added up.
async def serve_asgi(  # noqa: C901
    request: web.Request,
    app: ASGIApp,
    body: bytes,
    *,
    on_response_start: Callable[[int], None] | None = None,
    drop_headers: frozenset[bytes] = frozenset(),
) -> web.StreamResponse:
    """Run `app` for `request` (whose body is already read) and return aiohttp's response."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": "http",
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers if k.lower() not in drop_headers],
        "client": tuple(peer[:2]) if peer else None,
        "server": tuple(sock[:2]) if sock else None,
        "state": {},
    }
    body_sent = False
    response: web.StreamResponse | None = None
    start: Message | None = None
    finished = False

    async def receive() -> Message:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        # aiohttp offers no disconnect event to await, so look at the transport periodically.
        while not (finished or _gone(request)):  # noqa: ASYNC110
            await asyncio.sleep(_DISCONNECT_POLL_S)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response, start, finished
        kind = message["type"]
        if kind == "http.response.start":
            start = message
            if on_response_start is not None:
                on_response_start(int(message["status"]))
            if _is_event_stream(message) and not _gone(request):
                # Status and headers go out now, not with the first event: on a quiet stream that
                # is the first keep-alive, keepalive_s later, and the client would wait that long.
                try:
                    response = web.StreamResponse(status=message["status"], headers=_headers(message))
                    await response.prepare(request)
                except (ConnectionError, RuntimeError):
                    finished = True
            return
        if kind != "http.response.body" or start is None or finished:
            return
        chunk = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        if response is None and not more:
            # Whole answer in one piece (JSON responses): a plain Response, no chunking.
            response = web.Response(status=start["status"], body=chunk, headers=_headers(start))
            finished = True
            return
        if _gone(request):
            finished = True
            return
        try:
            if response is None:
                response = web.StreamResponse(status=start["status"], headers=_headers(start))
                await response.prepare(request)
            if chunk:
                await response.write(chunk)
            if not more:
                await response.write_eof()
                finished = True
        except (ConnectionError, RuntimeError):
            finished = True  # the client went away mid-stream: drop the rest

    try:
        await app(scope, receive, send)
    finally:
        finished = True
    if response is None:
        if start is not None:
            return web.Response(status=start["status"], headers=_headers(start))
        return web.Response(status=500, text="no response from the MCP handler")
    return response


def _is_event_stream(start: Message) -> bool:
    return any(
        k.lower() == b"content-type" and v.lower().startswith(b"text/event-stream")
        for k, v in start.get("headers", [])
    )


def _headers(start: Message) -> list[tuple[str, str]]:
    # Content-Length is recomputed by aiohttp; keep everything else the app chose.
    return [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in start.get("headers", [])
        if k.lower() != b"content-length"
    ]
