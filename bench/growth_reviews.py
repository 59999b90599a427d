"""Issue 29's review axis: how long a big review blocks Neovim, and what memory it leaves behind.

For each size, one Neovim with the plugin and one MCP client with its event stream open:
openDiff of an N-line file (every 97th line changed), wait until the review is filled, then
`:GeminiAccept` until `ide/diffAccepted` (with the exact text) reaches the client. Meanwhile a
second RPC client calls `nvim_eval('1')` every 2 ms (bench/stall_probe.py, in a process of its
own): its slowest answer is the stall ("eval max", the scale probe's method). The accepted text
is checked equal every run. Memory: the Neovim and host RSS before the first review and after
the last one closed (a few seconds later); the host's again after the client's next call and
after the user's next move (each releases what the MCP SDK keeps of the last request and event).

Run alone: `python -m bench.growth_reviews` (`--runs N`, `--sizes 200000,1000000`, `--reject`:
close each review instead, so the memory figure leaves out what :GeminiChanges keeps of an
accepted text).
`measure()` returns the growth table's rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run import RawRpc, rss_kib
from bench.stall_probe import StallProbe
from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import EventStream, McpHttp

GOAL_MS = 50.0
MiB = 1024 * 1024
# The bench raises the body and file limits so that 1 M lines (22 MB) reaches Neovim at all;
# the defaults are not the bench's to choose.
INIT = "vim.g.gemini_companion = { max_body_bytes = 256 * 1024 * 1024, max_file_bytes = 256 * 1024 * 1024 }\n"
# The smallest review that is filled in slices and compared in a thread (past 50 000 lines).
WARM_LINES = 60_000
FILLED = "local r = require('gemini_companion.review').reviews()[1]; return r ~= nil and not r.filling"
READY = (
    "local r = require('gemini_companion.review').reviews()[1]; return r ~= nil and not r.filling"
    " and (not r.compare or r.hunks_tick == vim.api.nvim_buf_get_changedtick(r.proposed))"
)


def texts(lines: int) -> tuple[str, str]:
    disk = "".join(f"value_{i} = {i}\n" for i in range(lines))
    proposal = "".join(f"value_{i} = {i * (2 if i % 97 == 0 else 1)}\n" for i in range(lines))
    return disk, proposal


def rss_now(nvim: Neovim, host_pid: int) -> dict[str, int]:
    assert nvim.proc is not None
    return {"nvim": rss_kib(nvim.proc.pid)["VmRSS"], "host": rss_kib(host_pid)["VmRSS"]}


def one_size(base: Path, lines: int, runs: int, reject: bool = False) -> dict[str, Any]:
    nvim = Neovim(base, init_lua=INIT).start()
    disc = nvim.wait_discovery()
    target = nvim.workspace / "big.py"
    disk, proposal = texts(lines)
    target.write_text(disk)
    client = McpHttp(disc.port, disc.token)
    client.initialize()
    stream = EventStream(client, disc.port)
    rpc = RawRpc(nvim.sock)
    host_pid = int(nvim.server_state()["host_pid"])
    time.sleep(0.5)
    before = rss_now(nvim, host_pid)
    after_first: dict[str, int] = {}
    poller = StallProbe(nvim.sock)
    open_stall, accept_stall, open_ms, fill_ms = [], [], [], []
    # The worst stall while openDiff ran, while the review filled, until its hunks were found.
    phases: list[dict[str, float]] = []
    try:
        for _ in range(runs):
            client.conn.close()  # a fresh connection: the server closes idle ones
            t0 = time.perf_counter()
            client.call("openDiff", {"filePath": str(target), "newContent": proposal})
            t1 = time.perf_counter()
            wait_for(lambda: rpc.request("nvim_exec_lua", FILLED, []), 60, 0.005, what="review filled")
            t_filled = time.perf_counter()
            wait_for(lambda: rpc.request("nvim_exec_lua", READY, []), 60, 0.005, what="hunks found")
            t2 = time.perf_counter()
            phases.append(
                {
                    "call": round(poller.worst(t0, t1), 1),
                    "fill": round(poller.worst(t1, t_filled), 1),
                    "hunks": round(poller.worst(t_filled, t2), 1),
                }
            )
            open_stall.append(poller.worst(t0))
            open_ms.append((t1 - t0) * 1000)
            fill_ms.append((t2 - t0) * 1000)
            while not stream.queue.empty():
                stream.queue.get_nowait()
            t3 = time.perf_counter()
            rpc.request("nvim_command", "GeminiReject" if reject else "GeminiAccept")
            while True:
                _, msg = stream.queue.get(timeout=60)
                if msg.get("method") == "ide/diffRejected" and reject:
                    break
                if msg.get("method") == "ide/diffAccepted":
                    assert msg["params"]["content"] == proposal, "accepted text differs"
                    break
            accept_stall.append(poller.worst(t3))
            time.sleep(0.3)
            if not after_first:
                time.sleep(3)  # the teardown and whatever frees memory later
                after_first = rss_now(nvim, host_pid)
        time.sleep(3)
        after = rss_now(nvim, host_pid)
        # The SDK keeps a session's last request (here the openDiff, with its text) until the
        # session's next one: the host once more after the client's next call, as an agent makes.
        client.conn.close()
        client.call("nvim_info", {})
        time.sleep(1)
        after_next_call = rss_now(nvim, host_pid)
        # The SDK's event-stream writer (and sse_starlette's) keeps the last event it sent (here
        # ide/diffAccepted, with the text) until the next: the host once more after the user's
        # next move (another file opened), whose ide/contextUpdate reaches the client.
        other = nvim.workspace / "other.py"
        other.write_text("x = 1\n")
        rpc.request("nvim_command", f"edit {other}")
        time.sleep(1.5)
        after_next_move = rss_now(nvim, host_pid)
    finally:
        poller.close()
        stream.close()
        client.close()
        rpc.close()
        nvim.quit()
    return {
        "lines": lines,
        "decision": "reject" if reject else "accept",
        "open_stall_ms": open_stall,
        "open_stall_by_phase_ms": phases,
        "accept_stall_ms": accept_stall,
        "openDiff_returns_ms": open_ms,
        "filled_ms": fill_ms,
        "rss_before_mib": mib(before),
        "rss_after_first_mib": mib(after_first),
        "rss_after_mib": mib(after),
        "host_rss_after_next_call_mib": mib(after_next_call)["host"],
        "host_rss_after_next_move_mib": mib(after_next_move)["host"],
    }


def mib(rss: dict[str, int]) -> dict[str, float]:
    return {k: round(v / 1024, 1) for k, v in rss.items()}


def _label(lines: int) -> str:
    return f"{lines // 1_000_000}M lines" if lines % 1_000_000 == 0 else f"{lines // 1000}k lines"


def rows_of(result: dict[str, Any], warm: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """`warm`: the RSS after one review of WARM_LINES in a Neovim of its own (what the first big
    review of any size costs: code run for the first time, modules loaded), shown beside."""
    worst = [max(a, b) for a, b in zip(result["open_stall_ms"], result["accept_stall_ms"], strict=True)]
    before, after = result["rss_before_mib"], result["rss_after_mib"]
    rows = [
        {
            "axis": "review",
            "size": _label(result["lines"]),
            "stall_ms_median": round(statistics.median(worst), 1),
            "stall_ms_min": round(min(worst), 1),
            "stall_ms_max": round(max(worst), 1),
            "goal": f"≤ {GOAL_MS:g} ms",
            "met": max(worst) <= GOAL_MS,
        }
    ]
    if before and after:
        first, runs = result["rss_after_first_mib"], len(worst)
        settled = {"nvim": after["nvim"], "host": result["host_rss_after_next_move_mib"]}
        grew = max((settled[k] - before[k]) / before[k] for k in before)
        rows.append(
            {
                "axis": "review memory",
                "size": _label(result["lines"]),
                "nvim_rss_mib": f"{before['nvim']} → {first['nvim']} after 1 → {after['nvim']} after {runs}",
                "host_rss_mib": f"{before['host']} → {first['host']} after 1 → {after['host']} after {runs}"
                f" ({result['host_rss_after_next_call_mib']} after the client's next call,"
                f" {result['host_rss_after_next_move_mib']} after the user's next move)",
                "note": (
                    f"after one {WARM_LINES // 1000}k-line review instead:"
                    f" Neovim {warm['nvim']}, host {warm['host']}"
                    if warm
                    else ""
                ),
                "goal": "within 10% of before (Neovim after the last, host after the next move)",
                "met": grew <= 0.10,
            }
        )
    return rows


def measure(sizes: tuple[int, ...] = (200_000, 1_000_000), runs: int = 3) -> list[dict[str, Any]]:
    """The growth table's review rows: the worst stall of open + accept, median, min and max of `runs`."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="growth-reviews-") as tmp:
        warm = one_size(Path(tmp) / "warm", WARM_LINES, 1)["rss_after_first_mib"]
        for lines in sizes:
            rows += rows_of(one_size(Path(tmp) / str(lines), lines, runs), warm)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="200000,1000000")
    ap.add_argument("--raw", action="store_true", help="print each run's figures too")
    ap.add_argument("--reject", action="store_true", help="reject each review instead of accepting it")
    args = ap.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="growth-reviews-") as tmp:
        for lines in sizes:
            result = one_size(Path(tmp) / str(lines), lines, args.runs, args.reject)
            if args.raw:
                print(json.dumps(result))
            for row in rows_of(result):
                print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
