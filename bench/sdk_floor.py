"""The floor issue 29 measures our `tools/call` against: bare aiohttp, the SDK's dispatch and one
msgpack-RPC call into Neovim, and nothing of ours between them (no policy, registry, catalog,
argument checks or gateway). The SDK is set up as ours is (its session manager answering JSON, its
low-level `Server` without its default OpenTelemetry middleware); aiohttp reaches it through our
ASGI shim, the few lines without which aiohttp cannot serve an ASGI app at all. The tool does the
same work in Neovim as ours (`LUA_SAME_WORK`) over a raw asyncio msgpack-RPC connection.

Run as `python -m bench.sdk_floor NVIM_SOCK`: serves on a free port of 127.0.0.1, printed first.
`sdk_floor(sock, calls, timed)` runs it and times `calls` round trips of the bench's client.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from tests.support.mcp_http import McpHttp

# The work our `nvim_info` does in Neovim (bench/run.py's floors do the same).
LUA_SAME_WORK = "return require('gemini_companion.tools').call('nvim_info', {})"

ROOT = Path(__file__).resolve().parents[1]


class Rpc:
    """msgpack-RPC requests to Neovim over one asyncio connection, one at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.unpacker = msgpack.Unpacker(raw=False)
        self.ids = itertools.count(1)
        self.lock = asyncio.Lock()

    async def request(self, method: str, *args: Any) -> Any:
        async with self.lock:
            msgid = next(self.ids)
            self.writer.write(msgpack.packb([0, msgid, method, list(args)]))
            while True:
                for msg in self.unpacker:
                    if msg[0] == 1 and msg[1] == msgid:
                        if msg[2] is not None:
                            raise RuntimeError(msg[2])
                        return msg[3]
                self.unpacker.feed(await self.reader.read(65536))


async def serve(sock: str) -> None:
    from aiohttp import web
    from gemini_companion.http.asgi_bridge import serve_asgi
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    rpc = Rpc(*await asyncio.open_unix_connection(sock))

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="nvim_info", inputSchema={"type": "object"})])

    async def call_tool(_ctx: Any, _params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await rpc.request("nvim_exec_lua", LUA_SAME_WORK, [])
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))])

    server: Server[Any] = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def handle(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(request, manager.handle_request, await request.read())

    app = web.Application()
    app.router.add_route("*", "/mcp", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    async with manager.run():
        await site.start()
        server_sockets = site._server.sockets if site._server else []
        print(server_sockets[0].getsockname()[1], flush=True)
        await asyncio.Event().wait()


def sdk_floor(sock: Path, calls: int, timed: Callable[..., list[float]]) -> list[float]:
    """Round trips of the bench's client to the floor server (own process) on Neovim `sock`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.sdk_floor", str(sock)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        client = McpHttp(int(proc.stdout.readline()), "token")
        client.initialize()
        samples = timed(lambda: client.call("nvim_info"), calls)
        client.close()
        return samples
    finally:
        proc.terminate()
        proc.wait(5)


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
