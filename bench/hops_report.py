"""Where one trivial tools/call spends its time, hop by hop, and the floors under it.

One Neovim is started with bench/hops/ on PYTHONPATH (its sitecustomize times the host's hop
boundaries, see there) and a Lua wrapper around `tools.call`; the bench client times each call
from outside. All three clocks are CLOCK_MONOTONIC, so a call's timestamps share one time line.
"""

from __future__ import annotations

import bisect
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import McpHttp

HOPS_DIR = Path(__file__).resolve().parent / "hops"

# Wraps the Lua entries Python calls for a tool and for openDiff (looked up per call, so
# replacing them works).
LUA_PROBE = """
_G.__hops = {}
local hrtime = vim.uv.hrtime
local function timed(module, name)
  local m = require(module)
  local inner = m[name]
  m[name] = function(...)
    local t0 = hrtime()
    local reply = inner(...)
    local h = _G.__hops
    h[#h + 1] = t0
    h[#h + 1] = hrtime()
    return reply
  end
end
timed('gemini_companion.core.tools', 'call')
timed('gemini_companion.review', 'open')
"""

# (label, from event, to event): consecutive, so they add up to the client's whole call.
HOPS: list[tuple[str, str, str]] = [
    ("client send → host has the bytes (kernel, loopback)", "client_send", "http_bytes"),
    ("HTTP parse (aiohttp: bytes → request → app)", "http_bytes", "app_in"),
    ("auth/guard + our HTTP edge (middleware, body, ASGI scope)", "app_in", "sdk_in"),
    ("SDK: session lookup, Starlette request", "sdk_in", "sdk_post"),
    ("SDK: transport checks, JSON-RPC parse → session task", "sdk_post", "sdk_run"),
    ("SDK: params validation, middleware → our handler", "sdk_run", "tool_in"),
    ("our dispatch (argument checks, defaults)", "tool_in", "gw_in"),
    ("gateway (in-flight cap, timeout timer)", "gw_in", "rpc_send"),
    ("RPC to Neovim (pack, socket, Neovim's dispatch)", "rpc_send", "lua_in"),
    ("Lua: tools.call / diff.open", "lua_in", "lua_out"),
    ("RPC back (Neovim packs, socket, unpack)", "lua_out", "rpc_recv"),
    ("gateway return + our result building", "rpc_recv", "tool_out"),
    ("SDK: result serialised, back to the transport", "tool_out", "sdk_json"),
    ("SDK: JSON response → ASGI body", "sdk_json", "sdk_body"),
    ("our HTTP edge after the SDK (reply checks)", "sdk_body", "app_out"),
    ("aiohttp writes, client reads", "app_out", "client_done"),
]


# The hops grouped by who owns them (labels as in HOPS, by their first word or two).
GROUPS: dict[str, tuple[str, ...]] = {
    "kernel, client, aiohttp (the bare-aiohttp floor has these too)": (
        "client send",
        "HTTP parse",
        "aiohttp",
    ),
    "MCP SDK": ("SDK:",),
    "our Python (edge, dispatch, gateway, results)": ("auth/guard", "our ", "gateway"),
    "Neovim: RPC both ways + Lua": ("RPC ", "Lua:"),
}


def _group_of(label: str) -> str:
    for group, prefixes in GROUPS.items():
        if label.startswith(prefixes):
            return group
    raise KeyError(label)


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 4) if values else float("nan")


def fifty_k_diff(workspace: Path) -> tuple[Path, str]:
    """A 50 000-line file and a proposal changing every 97th line."""
    target = workspace / "large.py"
    target.write_text("".join(f"value_{i} = {i}\n" for i in range(50_000)))
    proposal = "".join(f"value_{i} = {i * (2 if i % 97 == 0 else 1)}\n" for i in range(50_000))
    return target, proposal


def measure_hops(base: Path, calls: int, tool: str, diffs: int) -> dict[str, Any]:
    """`calls` sequential tools/call of `tool`, then `diffs` openDiff of a 50 000-line file."""
    out = base / "hops.json"
    nvim = Neovim(
        base,
        init_lua=LUA_PROBE,
        env={"PYTHONPATH": str(HOPS_DIR), "GEMINI_COMPANION_HOPS_OUT": str(out)},
    )
    ns = time.perf_counter_ns
    spawned = ns()
    try:
        nvim.start()
        socket_up = ns()
        wait_for(nvim.discovery_files, 60, interval=0.005, what="discovery file")
        discovered = ns()
        disc = nvim.wait_discovery()
        client = McpHttp(disc.port, disc.token)
        client.initialize()
        client.request("tools/list", {})
        ready = ns()
        for _ in range(100):
            client.call(tool)
        nvim.lua("_G.__hops = {}")
        tool_windows: list[tuple[int, int]] = []
        for _ in range(calls):
            t0 = ns()
            client.call(tool)
            tool_windows.append((t0, ns()))
        target, proposal = fifty_k_diff(nvim.workspace)
        diff_windows: list[tuple[int, int]] = []
        for _ in range(diffs):
            t0 = ns()
            client.call("openDiff", {"filePath": str(target), "newContent": proposal})
            diff_windows.append((t0, ns()))
            nvim.api.command("GeminiReject")
        client.close()
        lua = nvim.lua("return _G.__hops")
        last = (diff_windows or tool_windows)[-1][1]

        def host_events() -> list[tuple[str, int]] | None:
            if not out.exists():
                return None
            events = [(str(n), int(t)) for n, t in json.loads(out.read_text())]
            return events if events and max(t for _, t in events) >= last - 50_000_000 else None

        events = wait_for(host_events, 10, what="the host's hop timestamps")
    finally:
        nvim.quit()
    lua_events = [("lua_in" if i % 2 == 0 else "lua_out", int(t)) for i, t in enumerate(lua)]
    timeline = sorted(events + lua_events, key=lambda e: e[1])
    marks = {"Neovim's socket up": socket_up}
    for name, t in timeline:
        if name in ("host_start", "server_thread") or name.startswith("import:"):
            marks.setdefault(name, t)
    marks.update({"discovery file written": discovered, "tools/list answered": ready})
    if "host_start" in marks:
        marks["Python host started (interpreter up)"] = marks.pop("host_start")
    if "server_thread" in marks:
        marks["server thread started (lifecycle.start)"] = marks.pop("server_thread")
    startup = {name: round((t - spawned) / 1e9, 3) for name, t in sorted(marks.items(), key=lambda m: m[1])}
    return {
        tool: split(tool_windows, timeline),
        "openDiff_50k": split(diff_windows, timeline),
        "startup_s": startup,
    }


def split(windows: list[tuple[int, int]], timeline: list[tuple[str, int]]) -> dict[str, Any]:
    """Each call's first timestamp of each hop boundary, within the call's window as the client saw it."""
    times = [t for _, t in timeline]
    per_hop: dict[str, list[float]] = {label: [] for label, _, _ in HOPS}
    per_group: dict[str, list[float]] = {group: [] for group in GROUPS}
    totals: list[float] = []
    for t0, t1 in windows:
        marks = {"client_send": t0, "client_done": t1}
        for name, t in timeline[bisect.bisect_left(times, t0) : bisect.bisect_right(times, t1)]:
            marks.setdefault(name, t)  # the first of each: the call's own
        totals.append((t1 - t0) / 1e6)
        sums = dict.fromkeys(GROUPS, 0.0)
        for label, start, end in HOPS:
            if start in marks and end in marks:
                per_hop[label].append((marks[end] - marks[start]) / 1e6)
                sums[_group_of(label)] += (marks[end] - marks[start]) / 1e6
        for group, total in sums.items():
            per_group[group].append(total)
    return {
        "calls": len(windows),
        "total_p50_ms": _p50(totals),
        "total_mean_ms": round(statistics.fmean(totals), 4) if totals else None,
        "hops_p50_ms": {label: _p50(v) if v else None for label, v in per_hop.items()},
        "hops_mean_ms": {label: round(statistics.fmean(v), 4) if v else None for label, v in per_hop.items()},
        "groups_p50_ms": {group: _p50(v) for group, v in per_group.items()},
    }


# A bare aiohttp server answering a tools/call-sized JSON-RPC reply: the HTTP floor.
_BARE_AIOHTTP = """
import asyncio, json, sys
from aiohttp import web

REPLY = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 200}]}})

async def handle(request):
    await request.read()
    return web.Response(body=REPLY.encode(), content_type="application/json")

async def main():
    app = web.Application()
    app.router.add_post("/mcp", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def bare_aiohttp_floor(calls: int, timed: Callable[..., list[float]]) -> list[float]:
    """Round trips of the same client and body to a bare aiohttp handler (own process)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BARE_AIOHTTP], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        client = McpHttp(port, "token")
        samples = timed(lambda: client.request("tools/call", {"name": "nvim_info", "arguments": {}}), calls)
        client.close()
        return samples
    finally:
        proc.terminate()
        proc.wait(5)
