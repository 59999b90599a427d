#!/usr/bin/env python3
"""`make bench`: latency, throughput, Neovim responsiveness and startup, next to their floors.

Writes bench/results.md (tables) and bench/results.json. Figures, not pass/fail: the machine
is shared and noisy, so the headline figures are repeated (`--repeats`) and given as the median
with the spread (min to max) over the runs, and ratios are taken within the same sitting. When the
peer (guill/mcp-tools.nvim) is checked out at $PEER_DIR (default /tmp/peers/mcp-tools.nvim, see
../shared/peers/README.md), its own benchmark runs between ours, as often, and is reported beside
ours. The hop-by-hop split of one call comes from bench/hops_report.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgpack  # a pynvim dependency
import pynvim

from bench.hops_report import bare_aiohttp_floor, fifty_k_diff, measure_hops
from bench.sdk_floor import LUA_SAME_WORK, sdk_floor
from bench.websocket import ws_one_client
from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import EventStream, McpHttp

ROOT = Path(__file__).resolve().parents[1]
TOOL = "nvim_info"


def stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)

    def pct(q: float) -> float:
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]

    return {
        "n": len(ms),
        "p50_ms": round(pct(0.5), 3),
        "p99_ms": round(pct(0.99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "min_ms": round(ms[0], 3),
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process used so far (load-independent, unlike latency)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_client(port: int, token: str, n: int, pids: dict[str, int] | None = None) -> dict[str, Any]:
    client = McpHttp(port, token)
    client.initialize()
    pids = pids or {}
    cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
    t0 = time.perf_counter()
    lat = timed(lambda: client.call(TOOL), n, warmup=0)
    wall = time.perf_counter() - t0
    cpu = {name: round((cpu_seconds(pid) - cpu0[name]) * 1000 / n, 3) for name, pid in pids.items()}
    client.close()
    return {**stats(lat), "calls_per_s": round(n / wall, 1), "cpu_ms_per_call": cpu}


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
    target, proposal = fifty_k_diff(nvim.workspace)
    client = McpHttp(port, token)
    client.initialize()
    rpc = RawRpc(nvim.sock)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.call("openDiff", {"filePath": str(target), "newContent": proposal})
        lat.append(time.perf_counter() - t0)
        visible = rpc.request("nvim_exec_lua", "return #require('gemini_companion.review').pending()", [])
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


# The plugin's own environment, as `:GeminiInstall` leaves it (the README's main path): the host
# is started with jobstart + rpcnotify, not by pynvim's synchronous `poll`.
OWN_HOST_INIT = """
dofile(vim.env.GEMINI_COMPANION_DEV_INIT)
vim.opt.runtimepath:prepend(vim.env.PLUGIN_DIR)
"""


def own_host_nvim(base: Path) -> Neovim:
    """A Neovim whose plugin finds "its" virtualenv installed (ours, linked) and runs its own host."""
    data, config = base / "data", base / "config" / "nvim"
    (data / "nvim" / "gemini_companion").mkdir(parents=True, exist_ok=True)
    config.mkdir(parents=True, exist_ok=True)
    (config / "init.lua").write_text(OWN_HOST_INIT)
    venv = data / "nvim" / "gemini_companion" / "venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    nvim_bin = (ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip()
    env = {"XDG_CONFIG_HOME": str(config.parent), "XDG_DATA_HOME": str(data), "PLUGIN_DIR": str(ROOT)}
    return Neovim(base, nvim_cmd=[nvim_bin], env=env)


def stalls(sock: Path, stop: threading.Event, out: list[float]) -> None:
    """From the first screen (v:vim_did_enter) on, nvim_eval('1') every 5 ms: Neovim's longest
    stall as another client sees it, whoever caused it."""
    rpc = RawRpc(sock)
    while not rpc.request("nvim_eval", "v:vim_did_enter"):
        time.sleep(0.002)
    while not stop.is_set():
        t = time.perf_counter()
        rpc.request("nvim_eval", "1")
        out.append(time.perf_counter() - t)
        time.sleep(0.005)
    rpc.close()


def startup(base: Path, runs: int, own_host: bool = False) -> dict[str, Any]:
    """Spawn → discovery file → tools/list answered; how long starting the host (its jobstart)
    blocked Neovim (the plugin's own figure) and the longest stall another client saw after the
    first screen. Both ways start the plugin's own host process: `own_host` from its virtualenv,
    else from the `:UpdateRemotePlugins` config's python3_host_prog."""
    ready, blocks, sockets, discovered, longest = [], [], [], [], []
    for i in range(runs):
        nvim = own_host_nvim(base / f"own{i}") if own_host else Neovim(base / f"startup{i}")
        t0 = time.monotonic()
        nvim.start()
        sockets.append(time.monotonic() - t0)
        seen: list[float] = []
        stop = threading.Event()
        watcher = threading.Thread(target=stalls, args=(nvim.sock, stop, seen))
        watcher.start()
        wait_for(nvim.discovery_files, 60, interval=0.005, what="discovery file")
        discovered.append(time.monotonic() - t0)
        disc = nvim.wait_discovery(timeout=60)
        client = McpHttp(disc.port, disc.token)
        client.initialize()
        tools = client.request("tools/list", {})["tools"]
        ready.append(time.monotonic() - t0)
        assert any(t["name"] == TOOL for t in tools)
        client.close()
        time.sleep(0.3)  # stalls just after the server is up count too
        stop.set()
        watcher.join()
        longest.append(max(seen) * 1000 if seen else float("nan"))
        blocks.append(
            wait_for(
                lambda n=nvim: n.lua("return require('gemini_companion.host').start_block_ms"),
                10,
                what="host start block figure",
            )
        )
        python = nvim.lua("return require('gemini_companion.host').process.python")
        assert (python.endswith("gemini_companion/venv/bin/python")) == own_host, python
        nvim.quit()
    return {
        "ready_s_median": round(statistics.median(ready), 3),
        "ready_s_all": [round(r, 3) for r in ready],
        # Where the start goes: Neovim listening (its socket), the discovery file (host + server up).
        "socket_s_all": [round(r, 3) for r in sockets],
        "discovery_file_s_all": [round(r, 3) for r in discovered],
        "host_boot_block_ms_median": round(statistics.median(blocks), 1),
        "host_boot_block_ms_all": [round(b, 1) for b in blocks],
        "longest_stall_after_first_screen_ms_all": [round(x, 1) for x in longest],
    }


def idle_host(base: Path, runs: int) -> dict[str, Any]:
    """Issue 29's idle Neovim (host from the plugin's virtualenv): spawn → discovery file; the host's
    RSS 1 s later with no client (it has not imported the SDK); the first client's `initialize`,
    which waits for that import, beside a second client's right after; the host's RSS then."""
    discovered, idle, cpu, first, second, serving = [], [], [], [], [], []
    for i in range(runs):
        nvim = own_host_nvim(base / f"idle{i}")
        t0 = time.monotonic()
        nvim.start()
        wait_for(nvim.discovery_files, 60, interval=0.005, what="discovery file")
        discovered.append(time.monotonic() - t0)
        disc = nvim.wait_discovery(timeout=60)
        pid = int(disc.data["hostPid"])
        time.sleep(1.0)
        idle.append(rss_kib(pid)["VmRSS"] / 1024)
        cpu.append(cpu_seconds(pid))
        clients = []
        for out in (first, second):
            client = McpHttp(disc.port, disc.token)
            t = time.perf_counter()
            client.initialize()
            out.append((time.perf_counter() - t) * 1000)
            clients.append(client)
        serving.append(rss_kib(pid)["VmRSS"] / 1024)
        for client in clients:
            client.close()
        nvim.quit()
    return {
        "runs": runs,
        "spawn_to_discovery_s": spread(discovered),
        "idle_rss_mib": spread(idle, 1),
        "idle_cpu_s": spread(cpu),
        "first_initialize_ms": spread(first, 1),
        "second_initialize_ms": spread(second, 1),
        "first_initialize_wait_ms": spread([f - s for f, s in zip(first, second, strict=True)], 1),
        "serving_rss_mib": spread(serving, 1),
    }


def sessions_at_the_cap(base: Path, newcomers: int) -> dict[str, Any]:
    """Issue 29's session axis on one Neovim (default max_sessions, 64): the cap filled with
    sessions whose clients vanished (initialize, then nothing: no stream, no DELETE), then
    `newcomers` more clients: how many are refused, and their initialize beside one below the cap."""
    nvim = own_host_nvim(base / "sessions").start()
    disc = nvim.wait_discovery(timeout=60)
    cap = 64  # max_sessions' default (config.py): a bench runs the defaults

    def initialize_ms() -> float | None:
        client = McpHttp(disc.port, disc.token)
        t = time.perf_counter()
        try:
            client.initialize()
        except RuntimeError:
            return None  # refused
        finally:
            client.close()
        return (time.perf_counter() - t) * 1000

    initialize_ms()  # the first client waits for the SDK's import: not a figure of this axis
    below = [x for x in (initialize_ms() for _ in range(cap - 2)) if x is not None]
    at_cap = [initialize_ms() for _ in range(newcomers)]
    admitted = [x for x in at_cap if x is not None]
    time.sleep(0.3)  # (the state Lua shows follows client changes 50 ms after the last one)
    count = nvim.server_state().get("client_count")
    nvim.quit()
    return {
        "max_sessions": cap,
        "abandoned_sessions": cap,
        "newcomers": newcomers,
        "refused": newcomers - len(admitted),
        "sessions_open_after": count,
        "initialize_below_cap_ms": spread(below, 2),
        "initialize_at_cap_ms": spread(admitted, 2) if admitted else None,
    }


def render_idle(r: dict[str, Any]) -> list[str]:
    """The idle host's figures (issue 29), with their goals."""
    if "idle_host" not in r:
        return []
    i, m = r["idle_host"], r["idle_host_machine"]
    met = {True: "met", False: "**missed**"}
    return [
        "## Idle host (issue 29)",
        "",
        f"Measured {m['date']}, load average {m['loadavg_start']} → {m['loadavg_end']}; {i['runs']} fresh "
        "Neovims (host from the plugin's virtualenv), median (min–max). Until the first client connects the "
        "host has not imported the MCP SDK, aiohttp or OpenSSL; the first client's `initialize` waits for "
        "that import (`ServerInstance.wake`), unless `:Gemini` started it (then the import runs while the "
        "agent starts).",
        "",
        "| figure | goal | median (min–max) | |",
        "|---|---|---|---|",
        f"| host RSS until the first client (1 s after the discovery file) | ≤ 40 MiB | "
        f"{_sp(i['idle_rss_mib'], ' MiB')} | {met[i['idle_rss_mib']['median'] <= 40]} |",
        f"| nvim spawn → discovery file | ≤ 0.6 s | {_sp(i['spawn_to_discovery_s'], ' s')} | "
        f"{met[i['spawn_to_discovery_s']['median'] <= 0.6]} |",
        f"| the host's CPU time until then (load-independent) | | {_sp(i['idle_cpu_s'], ' s')} | |",
        f"| the first client's `initialize` | measured | {_sp(i['first_initialize_ms'], ' ms')} | |",
        f"| a second client's `initialize`, right after | measured | "
        f"{_sp(i['second_initialize_ms'], ' ms')} | |",
        f"| the first one's wait for the import (first − second, per run) | measured | "
        f"{_sp(i['first_initialize_wait_ms'], ' ms')} | |",
        f"| host RSS once serving | | {_sp(i['serving_rss_mib'], ' MiB')} | |",
        "",
        *render_sessions(r),
    ]


def render_sessions(r: dict[str, Any]) -> list[str]:
    if "sessions_at_cap" not in r:
        return []
    c = r["sessions_at_cap"]
    at_cap = _sp(c["initialize_at_cap_ms"], " ms") if c["initialize_at_cap_ms"] else "none admitted"
    return [
        f"Sessions at the cap (`max_sessions` {c['max_sessions']}, one run): with all "
        f"{c['abandoned_sessions']} held by clients that vanished (no stream, no DELETE), "
        f"{c['newcomers']} newcomers: "
        f"**{c['refused']} refused** (goal: none; {'met' if c['refused'] == 0 else '**missed**'}); each ends "
        f"the session idle longest. Their `initialize` {at_cap}, below the cap "
        f"{_sp(c['initialize_below_cap_ms'], ' ms')}; sessions open after: {c['sessions_open_after']}.",
        "",
    ]


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


# What results.json keeps of each peer run (its script reports much more).
PEER_KEYS = frozenset(
    {
        "error",
        "date",
        "peer_commit",
        "node",
        "mcp_sdk",
        "one_client",
        "n_clients",
        "floor",
        "floor_raw",
        "startup_s",
        "cpu_ms_per_call_1client",
    }
)


def rss_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


# What the host's imports alone cost, step by step: the floor under its resident memory. The SDK
# as the host imports it (without its client: lean_import.import_lean), then our own modules.
_LEAN = "from gemini_companion.http.lean_import import import_lean; import_lean(); "
_IMPORT_STEPS = {
    "python": "",
    "+ pynvim": "import pynvim",
    "+ aiohttp": "import pynvim, aiohttp",
    "+ mcp_types": "import pynvim, aiohttp, mcp_types",
    "+ mcp.server": _LEAN + "import pynvim, aiohttp, mcp_types, mcp.server.lowlevel.server, "
    "mcp.server.streamable_http_manager",
    "+ our modules": _LEAN + "import pynvim, aiohttp, gemini_companion.serving",
}
_RSS_LINE = "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS')][0])"


def imports_rss_mib() -> dict[str, float]:
    out = {}
    for step, imports in _IMPORT_STEPS.items():
        code = (f"{imports}; " if imports else "") + _RSS_LINE
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        out[step] = round(int(done.stdout) / 1024, 1)
    return out


def host_rss_after_calls(nvim: Neovim, port: int, token: str, calls: int, fresh_kib: int) -> dict[str, Any]:
    """The Python host's resident memory before and after `calls` more tools/call."""
    pid = int(nvim.server_state()["host_pid"])
    before = rss_kib(pid)
    client = McpHttp(port, token)
    client.initialize()
    for _ in range(calls):
        client.call(TOOL)
    client.close()
    after = rss_kib(pid)
    return {
        "calls": calls,
        "rss_after_start_mib": round(fresh_kib / 1024, 1),
        "rss_of_imports_alone_mib": imports_rss_mib(),
        "rss_before_mib": round(before["VmRSS"] / 1024, 1),
        "rss_after_mib": round(after["VmRSS"] / 1024, 1),
        "peak_mib": round(after["VmHWM"] / 1024, 1),
    }


def spread(values: list[float], digits: int = 3) -> dict[str, Any]:
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "runs": [round(v, digits) for v in values],
    }


def repeated(
    nvim: Neovim, port: int, token: str, calls: int, per_client: int, *, host_pid: int
) -> dict[str, Any]:
    """One round of the headline figures on one Neovim: floors, 1 client, 4 clients."""
    raw = RawRpc(nvim.sock)
    nvim_py = pynvim.attach("socket", path=str(nvim.sock))
    out = {
        "floor_raw_rpc": stats(timed(lambda: raw.request("nvim_exec_lua", LUA_SAME_WORK, []), calls)),
        "floor_pynvim": stats(timed(lambda: nvim_py.exec_lua(LUA_SAME_WORK), calls)),
        "floor_aiohttp": stats(bare_aiohttp_floor(calls, timed)),
        "floor_sdk": stats(sdk_floor(nvim.sock, calls, timed)),
        "mcp_1_client": one_client(port, token, calls, {"host": host_pid, "nvim": nvim.proc.pid}),
        "mcp_4_clients": many_clients(port, token, 4, per_client),
        "ws_1_client": ws_one_client(port, token, calls),  # Claude Code's IDE WebSocket
    }
    raw.close()
    nvim_py.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5, help="rounds of the headline figures (and peer runs)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--per-client", type=int, default=300)
    ap.add_argument("--startup-runs", type=int, default=5)
    ap.add_argument("--hop-calls", type=int, default=1000)
    ap.add_argument("--rss-calls", type=int, default=10_000)
    ap.add_argument("--peer-dir", default=os.environ.get("PEER_DIR", "/tmp/peers/mcp-tools.nvim"))
    ap.add_argument("--idle-runs", type=int, default=7)
    ap.add_argument(
        "--only-idle",
        action="store_true",
        help="measure only the idle host's figures, into the last results (results.json)",
    )
    args = ap.parse_args()
    if args.only_idle:
        results = json.loads((ROOT / "bench" / "results.json").read_text())
        measure_idle(results, args.idle_runs)
        write_results(results)
        return

    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        }
    }
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        results["startup"] = startup(base, args.startup_runs)
        results["startup_own_host"] = startup(base, args.startup_runs, own_host=True)
        results["hops"] = measure_hops(base / "hops", args.hop_calls, TOOL, diffs=5)
        results["tools"] = tool_latency(base, 200)
        nvim = Neovim(base / "main").start()
        disc = nvim.wait_discovery()
        host_pid = int(nvim.wait_state("running")["host_pid"])
        fresh_rss = rss_kib(host_pid)["VmRSS"]
        rounds, peers = [], []
        for _ in range(args.repeats):  # ours and the peer's alternate: both meet the same load
            rounds.append(
                repeated(nvim, disc.port, disc.token, args.calls, args.per_client, host_pid=host_pid)
            )
            peer_run = peer(Path(args.peer_dir))
            if peer_run is not None:
                peers.append({k: v for k, v in peer_run.items() if k in PEER_KEYS})
        results["rounds"] = rounds
        results["peer_runs"] = peers
        nvim_py = pynvim.attach("socket", path=str(nvim.sock))
        results["mcp_n_clients"] = {
            "clients": args.clients,
            **many_clients(disc.port, disc.token, args.clients, args.per_client // 2, probe_sock=nvim.sock),
        }
        results["nvim_eval_idle"] = stats(timed(lambda: nvim_py.eval("1"), 300))
        results["context_push"] = context_latency(nvim, disc.port, disc.token, 200)
        results["open_diff_50k"] = open_diff_latency(nvim, disc.port, disc.token, 10)
        results["host_rss"] = host_rss_after_calls(nvim, disc.port, disc.token, args.rss_calls, fresh_rss)
        nvim_py.close()
        nvim.quit()
    results["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["summary"] = summarise(results)
    measure_idle(results, args.idle_runs)
    write_results(results)


def measure_idle(results: dict[str, Any], runs: int) -> None:
    machine = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory() as tmp:
        results["idle_host"] = idle_host(Path(tmp), runs)
        results["sessions_at_cap"] = sessions_at_the_cap(Path(tmp), 100)
    machine["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["idle_host_machine"] = machine


def write_results(results: dict[str, Any]) -> None:
    (ROOT / "bench" / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (ROOT / "bench" / "results.md").write_text(render(results))
    print(render(results))


def summarise(r: dict[str, Any]) -> dict[str, Any]:
    """Each figure the targets name, as median and spread over the runs."""
    rounds = r["rounds"]

    def over(key: str, field: str = "p50_ms") -> dict[str, Any]:
        return spread([x[key][field] for x in rounds])

    s: dict[str, Any] = {
        "ours_p50_ms": over("mcp_1_client"),
        "ours_ws_p50_ms": over("ws_1_client"),
        "floor_pynvim_p50_ms": over("floor_pynvim"),
        "floor_raw_p50_ms": over("floor_raw_rpc"),
        "floor_aiohttp_p50_ms": over("floor_aiohttp"),
        "floor_sdk_p50_ms": over("floor_sdk"),
        "ours_1_client_calls_per_s": over("mcp_1_client", "calls_per_s"),
        "ours_host_cpu_ms_per_call": spread([x["mcp_1_client"]["cpu_ms_per_call"]["host"] for x in rounds]),
        "ours_nvim_cpu_ms_per_call": spread([x["mcp_1_client"]["cpu_ms_per_call"]["nvim"] for x in rounds]),
        "ours_4_clients_calls_per_s": over("mcp_4_clients", "calls_per_s"),
        # Per round, so each ratio compares figures taken seconds apart.
        "p50_vs_sdk_floor": spread(
            [x["mcp_1_client"]["p50_ms"] / x["floor_sdk"]["p50_ms"] for x in rounds], 2
        ),
        "ready_s": spread(r["startup"]["ready_s_all"]),
        "boot_block_ms": spread(r["startup"]["host_boot_block_ms_all"], 1),
        "stall_ms": spread(r["startup"]["longest_stall_after_first_screen_ms_all"], 1),
        "own_ready_s": spread(r["startup_own_host"]["ready_s_all"]),
        "own_stall_ms": spread(r["startup_own_host"]["longest_stall_after_first_screen_ms_all"], 1),
        "open_diff_50k_ms": {
            "median": r["open_diff_50k"]["p50_ms"],
            "min": r["open_diff_50k"]["min_ms"],
            "max": r["open_diff_50k"]["max_ms"],
        },
        "host_rss_mib": r["host_rss"]["rss_after_mib"],
    }
    peers = [p for p in r["peer_runs"] if "error" not in p]
    if peers:
        s["peer_p50_ms"] = spread([p["one_client"]["p50_ms"] for p in peers])
        s["peer_4_clients_calls_per_s"] = spread([p["n_clients"]["calls_per_s"] for p in peers], 1)
        s["peer_bridge_cpu_ms_per_call"] = spread(
            [p["cpu_ms_per_call_1client"]["bridge_node"] for p in peers]
        )
        s["peer_nvim_cpu_ms_per_call"] = spread([p["cpu_ms_per_call_1client"]["nvim"] for p in peers])
        pairs = list(zip(rounds, peers, strict=False))
        s["p50_vs_peer"] = spread(
            [x["mcp_1_client"]["p50_ms"] / p["one_client"]["p50_ms"] for x, p in pairs], 2
        )
        s["throughput_4_vs_peer"] = spread(
            [x["mcp_4_clients"]["calls_per_s"] / p["n_clients"]["calls_per_s"] for x, p in pairs], 2
        )
        s["cpu_vs_peer"] = spread(
            [
                x["mcp_1_client"]["cpu_ms_per_call"]["host"] / p["cpu_ms_per_call_1client"]["bridge_node"]
                for x, p in pairs
            ],
            2,
        )
    return s


def _sp(d: dict[str, Any], unit: str = "") -> str:
    return f"{d['median']}{unit} ({d['min']}–{d['max']})"


def _peer(s: dict[str, Any], key: str) -> str:
    return _sp(s[key]) if key in s else "not run"


def render(r: dict[str, Any]) -> str:
    s = r["summary"]
    m = r["machine"]
    k = len(r["rounds"])
    met = {True: "met", False: "**missed**"}
    # The latency goals as issue 29 restated them against the mandated stack (the SDK stays in the
    # call path): the floor is bare aiohttp + the SDK's dispatch + one RPC (bench/sdk_floor.py).
    targets = [
        (
            "tools/call p50 ÷ floor p50 (bare aiohttp + SDK dispatch + RPC, side by side)",
            "≤ 1.15×",
            _sp(s["p50_vs_sdk_floor"], "×"),
            s["p50_vs_sdk_floor"]["median"] <= 1.15,
        ),
    ]
    if "p50_vs_peer" in s:
        targets += [
            (
                "tools/call p50 ÷ peer's p50",
                "≤ 0.6×",
                _sp(s["p50_vs_peer"], "×"),
                s["p50_vs_peer"]["median"] <= 0.6,
            ),
            (
                "4-client calls/s ÷ peer's",
                "≥ 2×",
                _sp(s["throughput_4_vs_peer"], "×"),
                s["throughput_4_vs_peer"]["median"] >= 2,
            ),
            (
                "server CPU per call ÷ peer's (our Python host / its Node bridge)",
                "≤ 0.45×",
                _sp(s["cpu_vs_peer"], "×"),
                s["cpu_vs_peer"]["median"] <= 0.45,
            ),
        ]
    targets += [
        (
            "host start blocks Neovim after the first screen — host from the plugin's virtualenv "
            "(`:GeminiInstall`, the README's main path): longest `nvim_eval` stall another client saw",
            "≤ 30 ms",
            _sp(s["own_stall_ms"], " ms"),
            s["own_stall_ms"]["median"] <= 30,
        ),
        (
            "… — `:UpdateRemotePlugins` (`make run`; host from python3_host_prog): its jobstart "
            "(the plugin's own figure) / longest stall seen",
            "≤ 30 ms",
            f"{_sp(s['boot_block_ms'], ' ms')} / {_sp(s['stall_ms'], ' ms')}",
            max(s["boot_block_ms"]["median"], s["stall_ms"]["median"]) <= 30,
        ),
        (
            "nvim spawn → tools/list answered — host from the plugin's virtualenv",
            "≤ 0.4 s",
            _sp(s["own_ready_s"], " s"),
            s["own_ready_s"]["median"] <= 0.4,
        ),
        (
            "… — `:UpdateRemotePlugins` (host from python3_host_prog)",
            "≤ 0.4 s",
            _sp(s["ready_s"], " s"),
            s["ready_s"]["median"] <= 0.4,
        ),
        (
            "openDiff of a 50 000-line file visible",
            "≤ 100 ms",
            _sp(s["open_diff_50k_ms"], " ms"),
            s["open_diff_50k_ms"]["median"] <= 100,
        ),
        (
            f"host RSS after {r['host_rss']['calls']} more calls",
            "≤ 80 MiB",
            f"{s['host_rss_mib']} MiB (before them {r['host_rss']['rss_before_mib']}, peak "
            f"{r['host_rss']['peak_mib']}; just started {r['host_rss']['rss_after_start_mib']}; "
            f"its imports alone {r['host_rss']['rss_of_imports_alone_mib']['+ our modules']})",
            s["host_rss_mib"] <= 80,
        ),
    ]
    lines = [
        "# Benchmark results",
        "",
        f"Measured {m['date']} on {m['cpus']} CPUs, Python {m['python']}; load average (1/5/15 min) "
        f"{m['loadavg_start']} at the start, {m['loadavg_end']} at the end. Tool `{TOOL}` (a trivial "
        "Neovim-bound Lua tool). Generated by `make bench`. Figures are the median of the runs with "
        f"(min–max) over {k} rounds; ours and the peer's rounds alternate, so both meet the same load.",
        "",
        "## Targets (issue 16 item 7; the latency goals as issue 29 restated them)",
        "",
        "| figure | target | ours: median (min–max) | |",
        "|---|---|---|---|",
        *(f"| {name} | {target} | {value} | {met[ok]} |" for name, target, value, ok in targets),
        "",
        "What a missed figure is made of: for a call, the hop table below (and why the SDK's hop stays: "
        "docs/HTTP-EDGE.md, “The SDK's per-request hop”); for the start, the start timeline below.",
        "",
        "| figure, median (min–max) | ours | peer | floor: pynvim | floor: raw msgpack-RPC "
        "| floor: bare aiohttp | floor: aiohttp + SDK + RPC |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| tools/call p50 ms, 1 client | {_sp(s['ours_p50_ms'])} | "
        f"{_peer(s, 'peer_p50_ms')} | {_sp(s['floor_pynvim_p50_ms'])} | "
        f"{_sp(s['floor_raw_p50_ms'])} | {_sp(s['floor_aiohttp_p50_ms'])} | {_sp(s['floor_sdk_p50_ms'])} |",
        f"| tools/call p50 ms, 1 client over Claude Code's WebSocket | {_sp(s['ours_ws_p50_ms'])} "
        "| | | | | |",
        f"| calls/s, 4 clients | {_sp(s['ours_4_clients_calls_per_s'])} | "
        f"{_peer(s, 'peer_4_clients_calls_per_s')} | | | | |",
        f"| calls/s, 1 client | {_sp(s['ours_1_client_calls_per_s'])} | | | | | |",
        f"| server CPU ms per call (our Python host / the peer's Node bridge), 1 client | "
        f"{_sp(s['ours_host_cpu_ms_per_call'])} | "
        f"{_peer(s, 'peer_bridge_cpu_ms_per_call')} | | | | |",
        f"| Neovim CPU ms per call, 1 client | {_sp(s['ours_nvim_cpu_ms_per_call'])} | "
        f"{_peer(s, 'peer_nvim_cpu_ms_per_call')} | | | | |",
        "",
        "CPU time per call does not depend on the machine's load the way latency does: on this shared "
        "machine it is the steadier comparison.",
        "",
    ]
    lines += render_idle(r)
    lines += render_hops(r["hops"], s)
    many = r["mcp_n_clients"]
    load = many["nvim_eval_during_load"]
    lines += [
        "",
        "## Other figures (one run)",
        "",
        f"{many['clients']} clients: p50 {many['p50_ms']} / p99 {many['p99_ms']} ms, "
        f"{many['calls_per_s']} calls/s, "
        f"errors {many['errors']}. Neovim `nvim_eval('1')` from another client: idle p50 "
        f"{r['nvim_eval_idle']['p50_ms']} / p99 {r['nvim_eval_idle']['p99_ms']} ms; during that load "
        f"p50 {load.get('p50_ms')} / p99 {load.get('p99_ms')} ms.",
        "",
        "| per tool (MCP tools/call, 1 client) | p50 ms | p99 ms |",
        "|---|---:|---:|",
        f"| list_buffers | {r['tools']['list_buffers']['p50_ms']} | {r['tools']['list_buffers']['p99_ms']} |",
        f"| lsp_hover, warm python-lsp-server | {r['tools']['lsp_hover_warm']['p50_ms']} | "
        f"{r['tools']['lsp_hover_warm']['p99_ms']} |",
        f"| cursor move → ide/contextUpdate received (minus the {DEBOUNCE_MS} ms debounce) | "
        f"{r['context_push']['p50_ms']} | {r['context_push']['p99_ms']} |",
        f"| openDiff of a 50 000-line file until the view is open | {r['open_diff_50k']['p50_ms']} | "
        f"{r['open_diff_50k']['p99_ms']} |",
        "",
        "Resident memory of a Python that only imports, step by step (MiB): "
        + ", ".join(f"{k} {v}" for k, v in r["host_rss"]["rss_of_imports_alone_mib"].items())
        + ".",
        "",
        "Startup runs, host from the plugin's virtualenv: socket up "
        f"{r['startup_own_host']['socket_s_all']} s, discovery file "
        f"{r['startup_own_host']['discovery_file_s_all']} s, ready {r['startup_own_host']['ready_s_all']} s, "
        f"longest stall {r['startup_own_host']['longest_stall_after_first_screen_ms_all']} ms.",
        "",
        "Startup runs, `:UpdateRemotePlugins` (host from python3_host_prog): Neovim's socket up "
        f"{r['startup']['socket_s_all']} s, discovery file written "
        f"{r['startup']['discovery_file_s_all']} s, ready {r['startup']['ready_s_all']} s (the socket is "
        "polled every 50 ms, the discovery file every 5 ms); the host's jobstart blocked Neovim "
        f"{r['startup']['host_boot_block_ms_all']} ms; longest stall "
        f"{r['startup']['longest_stall_after_first_screen_ms_all']} ms.",
    ]
    peers = [p for p in r["peer_runs"] if "error" not in p]
    if peers:
        lines += [
            f"Peer (guill/mcp-tools.nvim, Node {peers[0].get('node')}, "
            f"MCP TS SDK {peers[0].get('mcp_sdk')}): "
            f"start → tools listed {[p.get('startup_s') for p in peers]} s; p99 "
            f"{[p['one_client']['p99_ms'] for p in peers]} ms.",
        ]
    failed = [p["error"] for p in r["peer_runs"] if "error" in p]
    if failed:
        lines += ["", f"Peer runs failed ({len(failed)}): {failed[0]}"]
    if not r["peer_runs"]:
        lines += ["", "Peer not checked out (see ../shared/peers/README.md); run it beside this for ratios."]
    return "\n".join(lines) + "\n"


def render_hops(both: dict[str, Any], s: dict[str, Any]) -> list[str]:
    h, d = both[TOOL], both["openDiff_50k"]
    lines = [
        "## Where a call spends its time",
        "",
        f"One instrumented Neovim: {h['calls']} sequential `{TOOL}` calls, then {d['calls']} openDiff of a "
        "50 000-line file (bench/hops/ times the host's boundaries, a Lua wrapper times the Lua entry; all "
        "on CLOCK_MONOTONIC, so the three processes share one time line). "
        f"`{TOOL}` in this run: p50 {h['total_p50_ms']} ms (uninstrumented, median of the rounds: "
        f"{s['ours_p50_ms']['median']} ms; the difference is the probes plus the load of the moment). "
        "Medians of hops do not add up to the median of the whole; the means do.",
        "",
        f"| hop | `{TOOL}` p50 ms | `{TOOL}` mean ms | openDiff 50k p50 ms |",
        "|---|---:|---:|---:|",
    ]

    def cell(value: Any) -> str:
        return "n/a" if value is None else str(value)

    for label, value in h["hops_p50_ms"].items():
        mean, diff = h["hops_mean_ms"][label], d["hops_p50_ms"][label]
        lines.append(f"| {label} | {cell(value)} | {cell(mean)} | {cell(diff)} |")
    lines += [
        f"| *{group}* (p50 of each call's sum) | *{v}* | | *{d['groups_p50_ms'][group]}* |"
        for group, v in h["groups_p50_ms"].items()
    ]
    lines += [
        f"| **whole call, seen by the client** | **{h['total_p50_ms']}** | **{h['total_mean_ms']}** | "
        f"**{d['total_p50_ms']}** |",
        "",
        f"Floors beside it (median p50 over the rounds): pynvim `exec_lua` of the same Lua "
        f"{s['floor_pynvim_p50_ms']['median']} ms, raw msgpack-RPC {s['floor_raw_p50_ms']['median']} ms, "
        "bare aiohttp POST with the same client and a same-sized JSON reply "
        f"{s['floor_aiohttp_p50_ms']['median']} ms.",
    ]
    for name, run in ((TOOL, h), ("openDiff 50k", d)):
        above_floor = {
            k: v for k, v in run["hops_p50_ms"].items() if v is not None and not k.startswith(GROUPS_AT_FLOOR)
        }
        if above_floor:
            top = max(above_floor, key=lambda k: above_floor[k])
            lines.append(f"Biggest hop above the floors, {name}: {top} ({above_floor[top]} ms p50).")
    timeline = both.get("startup_s", {})
    if timeline:
        lines += [
            "",
            "Where the start of that (`:UpdateRemotePlugins`) Neovim went, seconds after spawning it "
            "(`import:` = that module and what it imports finished loading in the host):",
            "",
            "| moment | s |",
            "|---|---:|",
            *(f"| {name} | {t} |" for name, t in timeline.items()),
        ]
    missing = [k for k, v in h["hops_p50_ms"].items() if v is None]
    if missing:
        lines += [
            "",
            f"**{len(missing)} hop(s) not measured** ({', '.join(missing)}): a boundary that bench/hops/ "
            "wraps was renamed or moved; update PATCHES there.",
        ]
    return lines


# Hops the bare floors pay too (kernel, client, aiohttp's own parse and write).
GROUPS_AT_FLOOR = ("client send", "HTTP parse", "aiohttp")


if __name__ == "__main__":
    main()
