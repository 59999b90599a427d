"""Canaries: the upstream misbehaviour each workaround in `sdk_compat` exists for is still there.

Each test drives the MCP SDK's own session manager over ASGI, WITHOUT our HTTP edge, and asserts
what upstream gets wrong. When one fails after an upgrade, upstream fixed it: delete the
workaround named in the test's docstring, and the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from gemini_companion.http.sdk_compat import connection_of
from mcp.server import streamable_http
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

PROTOCOL = "2025-06-18"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    receive_calls: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Sdk:
    """The SDK's manager with two tools: `echo`, and `wait`, which runs until released."""

    manager: StreamableHTTPSessionManager
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    seen_session_ids: list[str | None] = field(default_factory=list)
    session_id: str = ""

    async def request(self, method: str, message: Any = None, **headers: str) -> Reply:
        body = b"" if message is None else json.dumps(message).encode()
        sent: list[dict[str, Any]] = []
        receive_calls = 0
        all_headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL,
            **({"mcp-session-id": self.session_id} if self.session_id else {}),
            **headers,
        }

        async def receive() -> dict[str, Any]:
            nonlocal receive_calls
            receive_calls += 1
            if receive_calls == 1:
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}  # the client is gone at once

        async def send(msg: dict[str, Any]) -> None:
            sent.append(msg)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "root_path": "",
            "headers": [(k.encode(), v.encode()) for k, v in all_headers.items()],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 2),
            "state": {},
        }
        await self.manager.handle_request(scope, receive, send)
        start = next((m for m in sent if m["type"] == "http.response.start"), None)
        return Reply(
            status=start["status"] if start else 0,
            headers={k.decode(): v.decode() for k, v in start["headers"]} if start else {},
            body=b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
            receive_calls=receive_calls,
        )

    async def post(self, message: Any) -> Reply:
        return await self.request("POST", message)

    async def initialize(self) -> None:
        reply = await self.post(_initialize(1))
        self.session_id = reply.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, rid: Any, tool: str) -> dict[str, Any]:
        params = {"name": tool, "arguments": {}}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _initialize(rid: int, **params: Any) -> dict[str, Any]:
    defaults = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {**defaults, **params}}


@contextlib.asynccontextmanager
async def running_sdk() -> AsyncIterator[Sdk]:
    holder: list[Sdk] = []

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        sdk = holder[0]
        sdk.seen_session_ids.append(connection_of(ctx).session_id)
        if params.name == "wait":
            sdk.started.set()
            await sdk.release.wait()
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    server: Server[Any] = Server("canary", on_call_tool=call_tool, on_list_tools=list_tools)
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    holder.append(Sdk(manager))
    async with manager.run():
        yield holder[0]
        holder[0].release.set()


async def test_sdk_still_answers_a_cancelled_request() -> None:
    """Workaround: sdk_compat.drop_cancelled_reply (MCP: a cancelled request gets no answer)."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        call = asyncio.ensure_future(sdk.post(sdk.call(5, "wait")))
        await sdk.started.wait()
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        assert (await sdk.post(note)).status == 202
        reply = await call
    assert reply.status == 200
    assert reply.json()["error"]["code"] == -32800


async def test_sdk_still_answers_a_non_jsonrpc_message_with_a_validation_report() -> None:
    """Workaround: sdk_compat.refine_malformed_reply (first case)."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        reply = await sdk.post({"hello": "world"})
    assert reply.status == 400
    assert reply.json()["error"]["code"] == -32602
    assert reply.json()["error"]["message"].startswith("Validation error:")
    assert b'"message":"Validation error:' in reply.body[:200]  # what the workaround looks for


async def test_sdk_still_takes_a_request_with_a_null_id_for_a_notification() -> None:
    """Workaround: sdk_compat.refine_malformed_reply (second case): the client would wait forever."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        reply = await sdk.post({"jsonrpc": "2.0", "id": None, "method": "tools/list"})
    assert reply.status == 202
    assert reply.body == b""


async def test_sdk_still_loses_the_answer_of_a_request_whose_id_is_reused() -> None:
    """Workaround: sdk_compat.InFlight (a second request with the id of one in progress is refused)."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        first = asyncio.ensure_future(sdk.post(sdk.call(7, "wait")))
        await sdk.started.wait()
        second = await sdk.post(sdk.call(7, "echo"))
        assert second.status == 200
        sdk.release.set()
        # The first call's handler has its answer now, but the slot it would go to is gone.
        # A bound is needed to show that something never happens; it cannot make this test pass
        # wrongly: an upstream that answers the first call fails it however slowly it answers.
        done, _ = await asyncio.wait({first}, timeout=1.0)
        first.cancel()
    assert not done, "the SDK now answers both: delete sdk_compat.InFlight"


async def test_sdk_still_answers_a_get_with_last_event_id_with_nothing() -> None:
    """Workaround: sdk_compat.headers_to_drop (we keep no event store, so nothing to replay)."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        reply = await sdk.request("GET", None, **{"last-event-id": "whatever"})
    assert reply.status == 0  # not even a status line: the client waits forever
    assert reply.body == b""


def test_sdk_still_offers_no_keepalive_setting_for_event_streams() -> None:
    """Workaround: sdk_compat.set_event_stream_keepalive (a process-wide class attribute)."""
    for cls in (StreamableHTTPSessionManager, streamable_http.StreamableHTTPServerTransport):
        names = inspect.signature(cls.__init__).parameters
        assert not [n for n in names if "ping" in n or "keepalive" in n or "keep_alive" in n]
    source = inspect.getsource(streamable_http)
    constructions = source.split("EventSourceResponse(")[1:]
    assert constructions  # the SDK still builds sse-starlette's responses itself
    assert not [c for c in constructions if "ping" in c.split(")", 1)[0]]


async def test_sdk_still_keeps_the_connection_of_a_request_private() -> None:
    """Workaround: sdk_compat.connection_of (reads `ServerSession._connection`)."""
    assert "connection" not in {f.name for f in ServerRequestContext.__dataclass_fields__.values()}
    assert not hasattr(ServerSession, "connection")
    async with running_sdk() as sdk:
        await sdk.initialize()
        reply = await sdk.post(sdk.call(1, "echo"))
    assert reply.status == 200
    assert sdk.seen_session_ids == [sdk.session_id]  # and the private read still works


def test_sdk_still_has_no_way_to_end_a_session_or_cancel_a_call_from_the_server() -> None:
    """Workaround: sdk_compat.SessionControl (sends the transport a DELETE or a cancellation)."""
    public = {n for n in dir(StreamableHTTPSessionManager) if not n.startswith("_")}
    assert public <= {"run", "handle_request", "session_idle_timeout"}, public


def test_sdk_still_has_no_websocket_transport_and_keeps_its_context_streams_private() -> None:
    """Workaround: ws_transport.py builds the server loop's streams with the SDK's private
    `mcp.shared._context_streams.create_context_streams`, as the SDK's own stdio/SSE transports do,
    because `serve_loop` reads a `ContextReceiveStream` and there is no public way to make one nor
    a WebSocket server transport (mcp 1.x had `mcp.server.websocket`). When either appears, use it."""
    import importlib.util

    import mcp.shared
    from mcp.shared import _context_streams

    assert importlib.util.find_spec("mcp.server.websocket") is None
    assert not hasattr(mcp.shared, "create_context_streams")
    assert callable(_context_streams.create_context_streams)  # the private name we use is still there


async def test_sdk_still_keeps_the_session_of_a_failed_initialize() -> None:
    """Workaround: sdk_compat.SessionControl.forget_unborn_session."""
    async with running_sdk() as sdk:
        reply = await sdk.post(_initialize(1, capabilities="none"))
        assert reply.status == 200
        assert "error" in reply.json()
        sdk.session_id = reply.headers["mcp-session-id"]  # handed out with the error
        again = await sdk.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert again.status != 404  # and the session is alive


async def test_sdk_still_ignores_a_client_that_went_away_during_a_call() -> None:
    """Workaround: sdk_compat.SessionControl.cancel_abandoned (the call would run on)."""
    async with running_sdk() as sdk:
        await sdk.initialize()
        call = asyncio.ensure_future(sdk.post(sdk.call(3, "wait")))
        await sdk.started.wait()
        sdk.release.set()
        reply = await call
    # Our receive() reports the disconnect as soon as asked, but the SDK never asks after the body.
    assert reply.receive_calls == 1
    assert reply.status == 200


async def test_sdk_still_does_not_advertise_tool_list_changes() -> None:
    """Workaround: sdk_compat.ToolsListChangedServer (Lua registers tools at any time)."""
    async with running_sdk() as sdk:
        reply = await sdk.post(_initialize(1))
    assert reply.status == 200
    assert reply.json()["result"]["capabilities"]["tools"].get("listChanged") in (None, False)


def _modules_after(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded after running `code`."""
    import subprocess
    import sys

    script = code + "\nimport sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_packages_still_import_more_than_the_host_uses() -> None:
    """Canary for `lean_import.import_lean`: fails once mcp's package __init__ stops importing its
    client, or aiohttp's its client (then drop that package from `_LEAN_PACKAGES`)."""
    assert "mcp.client" in _modules_after("import mcp.server.streamable_http_manager")
    assert "aiohttp.client" in _modules_after("import aiohttp.web")


def test_sse_starlette_still_imports_uvicorn() -> None:
    """Canary for `lean_import.import_serving_stack`'s uvicorn block: fails once sse-starlette no
    longer imports uvicorn by itself (then drop the block)."""
    assert "uvicorn" in _modules_after("import sse_starlette.sse")


def test_the_lean_import_serves_the_host_without_the_clients_yet_completes_on_demand() -> None:
    code = (
        "import sys; sys.modules['ssl'] = sys.modules['_hashlib'] = None\n"  # as host.lua starts the host
        "from gemini_companion.http.lean_import import import_lean, import_serving_stack; import_lean()\n"
        "import gemini_companion.instance\n"
        "heavy = {'mcp_types', 'mcp.server.lowlevel', 'aiohttp.web', 'jsonschema', 'anyio', 'ssl'}\n"
        "assert not [m for m in heavy if sys.modules.get(m)], sys.modules  # the idle host: none of them\n"
        "import_serving_stack(); import gemini_companion.serving\n"
        "assert not {'mcp.client', 'aiohttp.client', 'uvicorn'} & set(sys.modules), 'unused ones came'\n"
        "import aiohttp.http; assert aiohttp.__version__ in aiohttp.http.SERVER_SOFTWARE\n"
        # what another plugin in a shared host may do:
        "from mcp import ClientSession; from mcp.server import Server; import aiohttp\n"
        "assert ClientSession.__module__ == 'mcp.client.session' and Server.__name__ == 'Server'\n"
        "assert aiohttp.ClientSession.__module__ == 'aiohttp.client'\n"
    )
    loaded = _modules_after(code)
    assert "mcp.client" in loaded and "aiohttp.client" in loaded
