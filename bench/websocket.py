"""A tools/call over Claude Code's IDE WebSocket, beside the same call over HTTP.

    .venv/bin/python -m bench.websocket [--calls 1000] [--rounds 3]

One Neovim; per round, `--calls` sequential `tools/call nvim_info` over /mcp (the bare HTTP client
the main benchmark uses) and over the WebSocket (one JSON-RPC message per frame, as claude sends
them), rounds interleaved so machine load hits both alike. `make bench` takes one such figure per
round too (`ws_one_client`, in bench/run.py's table).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.helpers import Neovim
from tests.support.mcp_http import McpHttp

TOOL = "nvim_info"


def _stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[int(len(ms) * 0.95) - 1], 3),
        "calls_per_s": round(len(ms) / (sum(ms) / 1000), 1),
    }


async def _ws_calls(port: int, token: str, n: int, warmup: int) -> list[float]:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(
            f"ws://127.0.0.1:{port}/", protocols=("mcp",), headers={"X-Claude-Code-Ide-Authorization": token}
        ) as ws,
    ):

        async def request(rid: int, method: str, params: dict[str, Any]) -> None:
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
            while json.loads((await ws.receive()).data).get("id") != rid:
                pass  # (a notification)

        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        await request(0, "initialize", init)
        await ws.send_str(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        samples = []
        for i in range(1, warmup + n + 1):
            t0 = time.perf_counter()
            await request(i, "tools/call", {"name": TOOL, "arguments": {}})
            if i > warmup:
                samples.append(time.perf_counter() - t0)
        return samples


def ws_one_client(port: int, token: str, n: int, warmup: int = 50) -> dict[str, float]:
    """Latency of `n` sequential tools/call over one WebSocket session."""
    return _stats(asyncio.run(_ws_calls(port, token, n, warmup)))


def http_one_client(port: int, token: str, n: int, warmup: int = 50) -> dict[str, float]:
    client = McpHttp(port, token)
    client.initialize()
    samples = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        client.call(TOOL)
        if i >= warmup:
            samples.append(time.perf_counter() - t0)
    client.close()
    return _stats(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        nvim = Neovim(Path(tmp) / "ws").start()
        try:
            disc = nvim.wait_discovery()
            nvim.wait_state("running")
            for round_no in range(1, args.rounds + 1):
                over_http = http_one_client(disc.port, disc.token, args.calls)
                over_ws = ws_one_client(disc.port, disc.token, args.calls)
                print(f"round {round_no}: HTTP {over_http}  WebSocket {over_ws}")
        finally:
            nvim.quit()


if __name__ == "__main__":
    main()
