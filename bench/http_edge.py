"""Which HTTP host for the SDK's ASGI app: aiohttp + our shim (what ships) or uvicorn?

    .venv/bin/python bench/http_edge.py [--calls 2000] [--rounds 3]

Each option serves the same SDK session manager (one trivial tool, no Neovim) from its own
process; one keep-alive client (stdlib http.client, so client cost is equal) makes `--calls`
sequential tools/call requests. Per option: p50/p95 of a call, import and start time of the
serving stack, RSS after start and after the calls, and the status a new client gets while
300 idle sockets are held open. Options:
  aiohttp       our real edge (http.app.build_app: policy, SDK workarounds, asgi_bridge)
  aiohttp-bare  aiohttp + asgi_bridge.serve_asgi alone (the shim's own cost)
  uvicorn       the SDK's ASGI app under uvicorn (h11, as installed), behind a token/Host/Origin check
Rounds interleave the options so machine load hits them alike; figures are median [min-max].
Results: docs/HTTP-EDGE.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = ("aiohttp", "aiohttp-bare", "uvicorn")
TOKEN = "bench-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "1"},
    },
}


# -- server side (a child process per option) ------------------------------------------------


def serve(option: str) -> None:
    t0 = time.perf_counter()
    import asyncio

    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    t1 = time.perf_counter()
    if option.startswith("aiohttp"):
        sys.path.insert(0, str(ROOT / "rplugin" / "python3"))
        import aiohttp.web  # noqa: F401 (timed here, used in host_aiohttp)
        import gemini_companion.http.app  # noqa: F401
    else:
        import uvicorn  # noqa: F401
    t2 = time.perf_counter()

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    server: Server[Any] = Server("bench", on_call_tool=call_tool)
    server.middleware = []  # as mcp_app does (no OpenTelemetry per message)
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    # proto=IPPROTO_TCP, as uvicorn's own bind makes it: only then does asyncio set TCP_NODELAY on
    # accepted sockets (aiohttp sets it itself), else uvicorn's separate header and body writes
    # meet delayed ACKs and every keep-alive answer takes 40 ms.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]

    def ready() -> None:
        report = {"port": port, "mcp_import_ms": (t1 - t0) * 1e3, "host_import_ms": (t2 - t1) * 1e3}
        report["start_ms"] = (time.perf_counter() - t2) * 1e3
        print(json.dumps(report), flush=True)

    async def main() -> None:
        async with manager.run():
            host = host_uvicorn if option == "uvicorn" else host_aiohttp
            await host(option, manager, sock, ready)

    asyncio.run(main())


async def host_uvicorn(_option: str, manager: Any, sock: socket.socket, ready: Any) -> None:
    """The SDK's ASGI app under uvicorn, behind the same Origin/Host/token checks."""
    import asyncio

    import uvicorn

    port = sock.getsockname()[1]
    expected = f"Bearer {TOKEN}".encode()
    hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        if (
            b"origin" in headers
            or headers.get(b"host") not in hosts
            or headers.get(b"authorization") != expected
        ):
            await send({"type": "http.response.start", "status": 403, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await manager.handle_request(scope, receive, send)

    config = uvicorn.Config(
        app, lifespan="off", log_level="warning", limit_concurrency=256, timeout_keep_alive=10
    )
    userver = uvicorn.Server(config)
    task = asyncio.ensure_future(userver.serve(sockets=[sock]))
    while not userver.started:  # noqa: ASYNC110 (uvicorn offers no event to await)
        await asyncio.sleep(0.001)
    ready()
    await task


async def host_aiohttp(option: str, manager: Any, sock: socket.socket, ready: Any) -> None:
    """Our edge as the product runs it (instance.py), or the shim alone."""
    import asyncio

    from aiohttp import web
    from gemini_companion.core.sessions import ClientRegistry
    from gemini_companion.http.app import ConnectionGuard, build_app
    from gemini_companion.http.asgi_bridge import serve_asgi

    guard = ConnectionGuard(256)
    if option == "aiohttp":
        port = sock.getsockname()[1]
        app = build_app(
            token=TOKEN,
            port=port,
            max_body_bytes=10 << 20,
            manager=manager,
            registry=ClientRegistry(),
            connections=guard,
        )
    else:

        async def bare(request: web.Request) -> web.StreamResponse:
            return await serve_asgi(request, manager.handle_request, await request.read())

        app = web.Application()
        app.router.add_route("*", "/mcp", bare)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, keepalive_timeout=10)
    await runner.setup()
    assert runner.server is not None
    guard.server = runner.server
    factory: Any = guard.factory if option == "aiohttp" else runner.server
    await asyncio.get_running_loop().create_server(factory, sock=sock)
    ready()
    await asyncio.Event().wait()


# -- client side -----------------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.headers = {
            "Host": f"127.0.0.1:{port}",
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }

    def post(self, message: dict[str, Any]) -> tuple[int, bytes]:
        self.conn.request("POST", "/mcp", json.dumps(message), self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if sid := response.getheader("mcp-session-id"):
            self.headers["Mcp-Session-Id"] = sid
        return response.status, body


def status_behind_idle_sockets(port: int, count: int = 300) -> float:
    """What a real client gets while any local process holds `count` idle sockets (no token, no
    request) open: both hosts cap connections at 256."""
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
    try:
        client = Client(port)
        client.conn.timeout = 10
        return float(client.post(INITIALIZE)[0])
    except OSError:
        return 0.0  # no answer at all
    finally:
        for sock in idle:
            sock.close()


def measure(option: str, calls: int) -> dict[str, float]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", option], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout is not None
        report: dict[str, float] = json.loads(child.stdout.readline())
        report["rss_start_mib"] = rss_mib(child.pid)
        port = report.pop("port")
        client = Client(int(port))
        client.post(INITIALIZE)
        client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        latencies = []
        for i in range(calls + 200):  # the first 200 warm up
            message = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "t"}}
            start = time.perf_counter()
            status, body = client.post(message)
            if i >= 200:
                latencies.append((time.perf_counter() - start) * 1e3)
            assert status == 200 and b'"ok"' in body, (status, body[:200])
        latencies.sort()
        report["p50_ms"] = statistics.median(latencies)
        report["p95_ms"] = latencies[int(len(latencies) * 0.95)]
        report["rss_after_mib"] = rss_mib(child.pid)
        report["status_behind_idle_sockets"] = status_behind_idle_sockets(int(port))
        return report
    finally:
        child.terminate()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=OPTIONS)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    runs: dict[str, list[dict[str, float]]] = {o: [] for o in OPTIONS}
    for _ in range(args.rounds):
        for option in OPTIONS:
            runs[option].append(measure(option, args.calls))
    keys = ("p50_ms", "p95_ms", "mcp_import_ms", "host_import_ms", "start_ms")
    keys += ("rss_start_mib", "rss_after_mib", "status_behind_idle_sockets")
    print(f"{args.rounds} rounds × {args.calls} calls, load {os.getloadavg()[0]:.1f}; median [min-max]")
    print(f"{'option':14}" + "".join(f"{k:>27}" for k in keys))
    for option, reports in runs.items():
        cells = []
        for k in keys:
            values = [r[k] for r in reports]
            digits = 2 if k.startswith("p") else 1 if k.startswith("rss") else 0
            low, mid, high = min(values), statistics.median(values), max(values)
            cells.append(f"{mid:.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]")
        print(f"{option:14}" + "".join(f"{c:>27}" for c in cells))


if __name__ == "__main__":
    main()
