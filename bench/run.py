#!/usr/bin/env python3
"""`make bench`: latency, throughput, Neovim responsiveness and startup, next to their floors.

Writes bench/results.md (a table) and bench/results.json. Figures, not pass/fail: the machine
is shared and noisy, so compare ratios measured in the same run. When the peer
(guill/mcp-tools.nvim) is checked out at $PEER_DIR (default /tmp/peers/mcp-tools.nvim, see
../shared/peers/README.md), its own benchmark runs in the same sitting and is reported beside ours.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgpack  # a pynvim dependency
import pynvim

from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import EventStream, McpHttp

ROOT = Path(__file__).resolve().parents[1]
TOOL = "nvim_info"
LUA_SAME_WORK = "return require('gemini_companion.tools').call('nvim_info', {})"


def stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)

    def pct(q: float) -> float:
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]

    return {
        "n": len(ms),
        "p50_ms": round(pct(0.5), 3),
        "p99_ms": round(pct(0.99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "max_ms": round(ms[-1], 3),
    }


class RawRpc:
    """A plain msgpack-RPC client on Neovim's socket: the floor under any plugin."""

    def __init__(self, sock: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(str(sock))
        self.up = msgpack.Unpacker(raw=False)
        self.i = 0

    def request(self, method: str, *args: Any) -> Any:
        self.i += 1
        self.s.sendall(msgpack.packb([0, self.i, method, list(args)]))
        while True:
            for msg in self.up:
                if msg[0] == 1 and msg[1] == self.i:
                    if msg[2] is not None:
                        raise RuntimeError(msg[2])
                    return msg[3]
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError("nvim closed the socket")
            self.up.feed(chunk)

    def close(self) -> None:
        self.s.close()


def timed(fn: Any, n: int, warmup: int = 50) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    pc = time.perf_counter
    for _ in range(n):
        t = pc()
        fn()
        out.append(pc() - t)
    return out


def one_client(port: int, token: str, n: int) -> dict[str, Any]:
    client = McpHttp(port, token)
    client.initialize()
    t0 = time.perf_counter()
    lat = timed(lambda: client.call(TOOL), n)
    wall = time.perf_counter() - t0
    client.close()
    return {**stats(lat), "calls_per_s": round(n / wall, 1)}


def many_clients(
    port: int, token: str, clients: int, per_client: int, probe_sock: Path | None = None
) -> dict[str, Any]:
    conns = [McpHttp(port, token) for _ in range(clients)]
    for c in conns:
        c.initialize()
        for _ in range(20):
            c.call(TOOL)
    barrier = threading.Barrier(clients + 1)
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()

    def worker(c: McpHttp) -> None:
        nonlocal errors
        mine: list[float] = []
        barrier.wait()
        for _ in range(per_client):
            t = time.perf_counter()
            try:
                c.call(TOOL)
            except Exception:
                with lock:
                    errors += 1
            mine.append(time.perf_counter() - t)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    probe: dict[str, Any] = {}
    stop = threading.Event()
    if probe_sock is not None:
        probe_thread = threading.Thread(target=nvim_responsiveness, args=(probe_sock, stop, probe))
        probe_thread.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    stop.set()
    if probe_sock is not None:
        probe_thread.join()
    for c in conns:
        c.close()
    return {
        **stats(lat),
        "calls_per_s": round(clients * per_client / wall, 1),
        "errors": errors,
        "nvim_eval_during_load": probe,
    }


def nvim_responsiveness(sock: Path, stop: threading.Event, out: dict[str, Any]) -> None:
    """nvim_eval('1') from a second RPC client while the load runs: does Neovim stay snappy?"""
    rpc = RawRpc(sock)
    lat = []
    while not stop.is_set():
        t = time.perf_counter()
        rpc.request("nvim_eval", "1")
        lat.append(time.perf_counter() - t)
        time.sleep(0.005)
    rpc.close()
    out.update(stats(lat))


DEBOUNCE_MS = 50


def context_latency(nvim: Neovim, port: int, token: str, n: int) -> dict[str, Any]:
    """Cursor moved in Neovim → the client has the ide/contextUpdate (debounce subtracted)."""
    target = nvim.workspace / "ctx.txt"
    target.write_text("".join(f"{i}\n" for i in range(1000)))
    rpc = RawRpc(nvim.sock)
    rpc.request("nvim_command", f"edit {target}")
    client = McpHttp(port, token)
    client.initialize()
    stream = EventStream(client, port)
    time.sleep(0.3)
    lat = []
    for i in range(n):
        line = 2 + (i % 900)
        while not stream.queue.empty():
            stream.queue.get_nowait()
        t0 = time.perf_counter()
        rpc.request("nvim_win_set_cursor", 0, [line, 0])
        while True:
            t, msg = stream.queue.get(timeout=5)
            files = msg.get("params", {}).get("workspaceState", {}).get("openFiles", [])
            if files and files[0].get("cursor", {}).get("line") == line:
                lat.append(t - t0 - DEBOUNCE_MS / 1000)
                break
        time.sleep(0.01)
    stream.close()
    client.close()
    rpc.close()
    return stats(lat)


def open_diff_latency(nvim: Neovim, port: int, token: str, n: int) -> dict[str, Any]:
    """openDiff of a 50 000-line file until the diff view is open (the call returns once it is)."""
    target = nvim.workspace / "large.py"
    target.write_text("".join(f"value_{i} = {i}\n" for i in range(50_000)))
    proposal = "".join(f"value_{i} = {i * (2 if i % 97 == 0 else 1)}\n" for i in range(50_000))
    client = McpHttp(port, token)
    client.initialize()
    rpc = RawRpc(nvim.sock)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.call("openDiff", {"filePath": str(target), "newContent": proposal})
        lat.append(time.perf_counter() - t0)
        visible = rpc.request("nvim_exec_lua", "return #require('gemini_companion.diff').pending()", [])
        assert visible == 1
        rpc.request("nvim_command", "GeminiReject")
    client.close()
    rpc.close()
    return stats(lat)


LSP_INIT = """
vim.api.nvim_create_autocmd('FileType', { pattern = 'python', callback = function(ev)
  vim.lsp.start({ name = 'pylsp', cmd = { '%s' }, root_dir = vim.fn.getcwd() }, { bufnr = ev.buf })
end })
"""


def tool_latency(base: Path, n: int) -> dict[str, Any]:
    """Per-tool latency through MCP: list_buffers, and lsp_hover against a warm python-lsp-server."""
    nvim = Neovim(base / "tools", init_lua=LSP_INIT % (ROOT / ".venv" / "bin" / "pylsp")).start()
    (nvim.workspace / "m.py").write_text("def greet(name: str) -> str:\n    return name\n\n\ngreet('x')\n")
    disc = nvim.wait_discovery()
    nvim.api.command("edit m.py")
    wait_for(lambda: nvim.lua("return #vim.lsp.get_clients({ bufnr = 0 })") == 1, 30, what="pylsp")
    client = McpHttp(disc.port, disc.token)
    client.initialize()
    hover = {"path": str(nvim.workspace / "m.py"), "line": 5, "column": 1}
    wait_for(lambda: "greet" in json.dumps(client.call("lsp_hover", hover)), 30, what="warm hover")
    out = {
        "list_buffers": stats(timed(lambda: client.call("list_buffers", {}), n)),
        "lsp_hover_warm": stats(timed(lambda: client.call("lsp_hover", hover), n // 2, warmup=10)),
    }
    client.close()
    nvim.quit()
    return out


def startup(base: Path, runs: int) -> dict[str, Any]:
    """Spawn → discovery file → tools/list answered; plus how long the host start blocked Neovim."""
    ready, blocks = [], []
    for i in range(runs):
        nvim = Neovim(base / f"startup{i}")
        t0 = time.monotonic()
        nvim.start()
        disc = nvim.wait_discovery(timeout=60)
        client = McpHttp(disc.port, disc.token)
        client.initialize()
        tools = client.request("tools/list", {})["tools"]
        ready.append(time.monotonic() - t0)
        assert any(t["name"] == TOOL for t in tools)
        client.close()
        blocks.append(
            wait_for(
                lambda n=nvim: n.lua("return require('gemini_companion.bridge').boot_block_ms"),
                10,
                what="boot block figure",
            )
        )
        nvim.quit()
    return {
        "ready_s_median": round(statistics.median(ready), 3),
        "ready_s_all": [round(r, 3) for r in ready],
        "host_boot_block_ms_median": round(statistics.median(blocks), 1),
    }


def peer(peer_dir: Path) -> dict[str, Any] | None:
    script = ROOT.parent / "shared" / "peers" / "mt_bridge_bench.py"
    venv = peer_dir.parent / "venv"
    if not (peer_dir.exists() and script.exists() and (venv / "bin" / "python").exists()):
        return None
    out = subprocess.run(
        [str(venv / "bin" / "python"), str(script), "--peer", str(peer_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith("JSON "):
            parsed: dict[str, Any] = json.loads(line[5:])
            return parsed
    return {"error": (out.stderr or out.stdout)[-500:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--per-client", type=int, default=200)
    ap.add_argument("--startup-runs", type=int, default=3)
    ap.add_argument("--peer-dir", default=os.environ.get("PEER_DIR", "/tmp/peers/mcp-tools.nvim"))
    args = ap.parse_args()

    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M"),
        }
    }
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        results["startup"] = startup(base, args.startup_runs)
        results["tools"] = tool_latency(base, 200)
        nvim = Neovim(base / "main").start()
        disc = nvim.wait_discovery()
        nvim_py = pynvim.attach("socket", path=str(nvim.sock))
        raw = RawRpc(nvim.sock)
        results["floor_raw_rpc"] = stats(
            timed(lambda: raw.request("nvim_exec_lua", LUA_SAME_WORK, []), args.calls)
        )
        results["floor_pynvim"] = stats(timed(lambda: nvim_py.exec_lua(LUA_SAME_WORK), args.calls))
        raw.close()
        results["mcp_1_client"] = one_client(disc.port, disc.token, args.calls)
        results["mcp_n_clients"] = {
            "clients": args.clients,
            **many_clients(disc.port, disc.token, args.clients, args.per_client, probe_sock=nvim.sock),
        }
        results["nvim_eval_idle"] = stats(timed(lambda: nvim_py.eval("1"), 300))
        results["context_push"] = context_latency(nvim, disc.port, disc.token, 200)
        results["open_diff_50k"] = open_diff_latency(nvim, disc.port, disc.token, 10)
        nvim_py.close()
        nvim.quit()
    results["peer"] = peer(Path(args.peer_dir))
    (ROOT / "bench" / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (ROOT / "bench" / "results.md").write_text(render(results))
    print(render(results))


def render(r: dict[str, Any]) -> str:
    floor = r["floor_raw_rpc"]["p50_ms"]
    one, many = r["mcp_1_client"], r["mcp_n_clients"]
    load = many["nvim_eval_during_load"]
    lines = [
        "# Benchmark results",
        "",
        f"Measured {r['machine']['date']} on {r['machine']['cpus']} CPUs, Python {r['machine']['python']}; "
        f"tool `{TOOL}` (a trivial Neovim-bound Lua tool). Generated by `make bench`.",
        "",
        "| what | p50 ms | p99 ms | calls/s | vs floor (p50) |",
        "|---|---:|---:|---:|---:|",
        f"| floor: raw msgpack-RPC, same Lua | {floor} | {r['floor_raw_rpc']['p99_ms']} | | 1.0× |",
        f"| floor: pynvim client, same Lua | {r['floor_pynvim']['p50_ms']} | "
        f"{r['floor_pynvim']['p99_ms']} | | {r['floor_pynvim']['p50_ms'] / floor:.1f}× |",
        f"| MCP tools/call, 1 client | {one['p50_ms']} | {one['p99_ms']} | {one['calls_per_s']} | "
        f"{one['p50_ms'] / floor:.1f}× |",
        f"| MCP tools/call, {many['clients']} clients | {many['p50_ms']} | {many['p99_ms']} | "
        f"{many['calls_per_s']} | {many['p50_ms'] / floor:.1f}× |",
        "",
        f"Errors under load: {many['errors']}. Neovim `nvim_eval('1')` from another client: idle "
        f"p50 {r['nvim_eval_idle']['p50_ms']} / p99 {r['nvim_eval_idle']['p99_ms']} ms; during the "
        f"{many['clients']}-client load p50 {load.get('p50_ms')} / p99 {load.get('p99_ms')} ms.",
        "",
        "| per tool (MCP tools/call, 1 client) | p50 ms | p99 ms |",
        "|---|---:|---:|",
        f"| list_buffers | {r['tools']['list_buffers']['p50_ms']} | {r['tools']['list_buffers']['p99_ms']} |",
        f"| lsp_hover, warm python-lsp-server | {r['tools']['lsp_hover_warm']['p50_ms']} | "
        f"{r['tools']['lsp_hover_warm']['p99_ms']} |",
        "",
        "| Gemini IDE | p50 ms | p99 ms |",
        "|---|---:|---:|",
        f"| cursor move → ide/contextUpdate received (minus the {DEBOUNCE_MS} ms debounce) | "
        f"{r['context_push']['p50_ms']} | {r['context_push']['p99_ms']} |",
        f"| openDiff of a 50 000-line file until the view is open | {r['open_diff_50k']['p50_ms']} | "
        f"{r['open_diff_50k']['p99_ms']} |",
        "",
        f"Startup: nvim spawn → tools/list answered {r['startup']['ready_s_median']} s (median of "
        f"{len(r['startup']['ready_s_all'])}: {r['startup']['ready_s_all']}); the Python host start blocked "
        f"Neovim for {r['startup']['host_boot_block_ms_median']} ms (after the first screen).",
    ]
    p = r.get("peer")
    if p and "error" not in p:
        po, pn = p.get("one_client", {}), p.get("n_clients", {})
        lines += [
            "",
            "## Peer (guill/mcp-tools.nvim, Node bridge), measured in the same run",
            "",
            "| what | peer | ours | peer ÷ ours |",
            "|---|---:|---:|---:|",
            f"| p50 ms, 1 client | {po.get('p50_ms', 0):.3f} | {one['p50_ms']} | "
            f"{po.get('p50_ms', 0) / one['p50_ms']:.2f} |",
            f"| p99 ms, 1 client | {po.get('p99_ms', 0):.3f} | {one['p99_ms']} | "
            f"{po.get('p99_ms', 0) / one['p99_ms']:.2f} |",
            f"| calls/s, 1 client | {po.get('calls_per_s')} | {one['calls_per_s']} | "
            f"{po.get('calls_per_s', 0) / one['calls_per_s']:.2f} |",
            f"| calls/s, many clients (peer {pn.get('threads', '?')}, ours {many['clients']}) | "
            f"{pn.get('calls_per_s')} | {many['calls_per_s']} | "
            f"{pn.get('calls_per_s', 0) / many['calls_per_s']:.2f} |",
            f"| start → tools listed, s | {p.get('startup_s')} | {r['startup']['ready_s_median']} | "
            f"{p.get('startup_s', 0) / r['startup']['ready_s_median']:.2f} |",
            f"| raw-RPC floor p50 ms (its tool / ours) | {p.get('floor_raw', {}).get('p50_ms', 0):.3f} | "
            f"{floor} | |",
        ]
    elif p:
        lines += ["", f"Peer run failed: {p['error']}"]
    else:
        lines += ["", "Peer not checked out (see ../shared/peers/README.md); run it beside this for ratios."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
