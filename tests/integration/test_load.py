"""Load: many concurrent clients, each with its own session, calling Lua tools; a real Neovim stays
responsive and the host's memory bounded. `make stress` runs the full size (STRESS=1). (Sessions
of gone clients and the session cap, the server alone: tests/protocol/test_sessions_under_load.py.)"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from bench.run import nvim_responsiveness, stats
from tests.support.helpers import Neovim, record_figure, wait_for
from tests.support.mcp_http import McpHttp

pytestmark = pytest.mark.slow

STRESS = os.environ.get("STRESS") == "1"
CLIENTS = 50
CALLS = 200 if STRESS else 24  # per client


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))


def _delete(client: McpHttp) -> None:
    """End the session the way a well-behaved client does (HTTP DELETE)."""
    client.conn.request(
        "DELETE",
        client.path,
        headers={
            "Authorization": f"Bearer {client.token}",
            "Mcp-Session-Id": client.session or "",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    client.conn.getresponse().read()
    client.session = None


def test_many_clients_with_mixed_calls(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    (nvim.workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    nvim.api.command("edit f.txt")
    host = disc.data["hostPid"]
    errors: list[str] = []
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS + 1)

    def client_loop() -> None:
        client = McpHttp(disc.port, disc.token)
        mine: list[float] = []
        try:
            client.initialize()
            barrier.wait()
            for i in range(CALLS):
                t0 = time.perf_counter()
                kind = i % 4
                if kind == 0 and i:
                    _delete(client)  # a fresh session now and then
                    client.initialize()
                elif kind == 1:
                    assert len(client.request("tools/list", {})["tools"]) > 10
                elif kind == 2:
                    assert "pid" in client.call("nvim_info")["structuredContent"]
                else:
                    read = client.call("read_buffer", {"bufnr": 0, "start_line": 1, "end_line": 5})
                    assert read["structuredContent"]["text"].startswith("line 0")
                mine.append(time.perf_counter() - t0)
            _delete(client)
        except Exception as exc:  # every failure is counted, none may happen
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            client.close()
            with lock:
                latencies.extend(mine)

    probe: dict[str, Any] = {}
    stop = threading.Event()

    rss_before = _rss_kib(host)
    threads = [threading.Thread(target=client_loop) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    prober = threading.Thread(target=nvim_responsiveness, args=(nvim.sock, stop, probe))
    prober.start()
    barrier.wait(timeout=60)
    t0 = time.monotonic()
    for t in threads:
        t.join(600)
    wall = time.monotonic() - t0
    stop.set()
    prober.join()
    rss_after = _rss_kib(host)
    assert errors == [], errors[:5]
    calls = stats(latencies)
    figures: dict[str, Any] = {
        "clients": CLIENTS,
        "calls": CLIENTS * CALLS,
        "errors": len(errors),
        "p50_ms": round(calls["p50_ms"], 2),
        "p99_ms": round(calls["p99_ms"], 2),
        "calls_per_s": round(calls["n"] / wall, 1),
        "nvim_eval_p50_ms": round(probe["p50_ms"], 2),
        "nvim_eval_p99_ms": round(probe["p99_ms"], 2),
        "host_rss_before_kib": rss_before,
        "host_rss_after_kib": rss_after,
    }
    record_figure("load.mixed", **figures)
    # Sessions were ended by the clients: none left behind.
    wait_for(lambda: nvim.server_state().get("client_count") == 0, what="sessions gone")
    # Memory: bounded growth (the first load warms caches; 10 000 calls must not add more than this).
    assert rss_after - rss_before < 60 * 1024, figures
