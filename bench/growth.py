#!/usr/bin/env python3
"""`make bench`'s "growth" table (issue 29): what a user feels as the work grows, one row per
size, each the longest stall another client saw (nvim_eval('1') every 2 ms, as the scale probe
measured, ../shared/research/scale-probe.md) with its spread over the runs, and the goal marked
met or missed. Writes bench/growth.md and bench/growth.json; `python -m bench.growth` alone.

Axes measured here: a big Visual selection (cursor moves), :GeminiSend of many lines, and
:GeminiChanges in a big git workspace; reviews of 200 k and 1 M lines (open, then accept, and the
memory after) come from bench/growth_reviews.py. Sessions at the cap and the idle host are in
bench/run.py's tables (bench/results.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import growth_reviews
from bench.run import spread
from bench.stall_probe import StallProbe
from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import McpHttp

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 50.0


def longest_stall(sock: Path, during: Callable[[], None]) -> float:
    """Run `during` while a second client asks nvim_eval('1') every 2 ms (bench/stall_probe.py):
    the slowest answer, ms."""
    probe = StallProbe(sock)
    t = time.perf_counter()
    try:
        during()
        return probe.worst(t)
    finally:
        probe.close()


def row(axis: str, size: str, stalls: list[float], extra: str = "") -> dict[str, Any]:
    s = spread(stalls, 1)
    return {
        "axis": axis,
        "size": size,
        "stall_ms": s,
        "goal": f"≤ {GOAL_MS:.0f} ms",
        "met": s["max"] <= GOAL_MS,  # no run may block longer
        "note": extra,
    }


def started(base: Path, workspace: Path | None = None, init_lua: str = "") -> Neovim:
    nvim = Neovim(base, cwd=workspace, init_lua=init_lua).start()
    nvim.wait_state("running")
    return nvim


def selection(base: Path, runs: int) -> list[dict[str, Any]]:
    """A 10 MB linewise selection (200 000 lines of 50 bytes): 20 cursor moves, each updating the
    context an agent reads (the selection's first 16 384 characters)."""
    stalls = []
    for i in range(runs):
        nvim = started(base / f"sel{i}")
        (nvim.workspace / "big.txt").write_text("".join(f"{n:08} " + "x" * 40 + "\n" for n in range(200_000)))
        nvim.api.command("edit big.txt")
        nvim.api.input("ggVG")
        time.sleep(0.3)

        def moves(nvim: Neovim = nvim) -> None:
            for _ in range(20):
                nvim.api.input("k")
                time.sleep(0.06)  # past the context's debounce: each move is extracted

        stalls.append(longest_stall(nvim.sock, moves))
        nvim.quit()
    return [row("selection", "10 MB, 20 moves", stalls)]


def send(base: Path, runs: int, lines: int) -> dict[str, Any]:
    """:GeminiSend of `lines` lines of 22 bytes into an agent that reads everything (`cat`)."""
    stalls, took = [], []
    for i in range(runs):
        agent = "require('gemini_companion').setup({ terminal = { cmd = { 'sh', '-c', 'cat >/dev/null' } } })"
        nvim = started(base / f"send{lines}-{i}", init_lua=agent)
        (nvim.workspace / "big.txt").write_text("".join(f"{n:07} = 'abcdefghijk'\n" for n in range(lines)))
        nvim.api.command("edit big.txt")
        nvim.api.command("Gemini")
        nvim.api.command("wincmd p")
        time.sleep(0.5)

        def go(nvim: Neovim = nvim) -> None:
            t = time.perf_counter()
            nvim.api.command("%GeminiSend")
            wait_for(
                lambda: not nvim.lua("return require('gemini_companion.terminal.send').sending"), 120, 0.02
            )
            took.append(time.perf_counter() - t)

        stalls.append(longest_stall(nvim.sock, go))
        nvim.quit()
    size = f"{lines * 22 / 1e6:.0f} MB ({lines // 1000}k lines)"
    return row("send", size, stalls, f"done in {spread(took, 2)['median']} s")


def git_tree(path: Path, files: int) -> None:
    path.mkdir(parents=True)
    for folder in range(files // 100):
        (path / f"d{folder:04}").mkdir()
        for n in range(100):
            (path / f"d{folder:04}" / f"f{n:02}.py").write_text(f"x = {folder * 100 + n}\n")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "commit", "-qm", "tree"], cwd=path, check=True)


def changes(base: Path, runs: int, files: int) -> dict[str, Any]:
    """:GeminiChanges in a git workspace of `files` files, 10 of them changed all over it."""
    tree = base / f"tree{files}"
    git_tree(tree, files)
    touched = [tree / f"d{folder:04}" / "f07.py" for folder in range(0, files // 100, files // 1000)]
    stalls, found = [], []
    for i in range(runs):
        nvim = started(base / f"changes{files}-{i}", workspace=tree)
        disc = nvim.wait_discovery()
        client = McpHttp(disc.port, disc.token)

        def snapshot(nvim: Neovim = nvim, client: McpHttp = client) -> None:
            client.initialize()
            wait_for(lambda: nvim.lua("return require('gemini_companion.changes').snapshotted()"), 120)

        stall_snapshot = longest_stall(nvim.sock, snapshot)
        for path in touched:
            path.write_text(path.read_text() + "y = 1\n")

        def scan(nvim: Neovim = nvim) -> None:
            nvim.api.command("GeminiChanges")
            wait_for(
                lambda: nvim.api.call("getqflist", {"title": 1})["title"].startswith("Gemini"), 120, 0.02
            )

        stalls.append(max(stall_snapshot, longest_stall(nvim.sock, scan)))
        found.append(len(nvim.api.call("getqflist")))
        nvim.quit()
        subprocess.run(["git", "checkout", "-q", "."], cwd=tree, check=True)
    return row(
        "changes", f"{files // 1000}k files (git)", stalls, f"changes listed: {found} of {len(touched)}"
    )


def render(rows: list[dict[str, Any]]) -> str:
    out = [
        "# Growth: what a user feels as the work grows",
        "",
        "The longest `nvim_eval('1')` a second client waited for (polling every 2 ms, from a process",
        "of its own: bench/stall_probe.py) while the operation ran: median (min–max) over the runs.",
        "Goal: no stall over 50 ms in any run. Review memory: the RSS of Neovim and of its plugin host",
        "before the first review, after the first, and after the last (3 s after it closed), the host's",
        "also after the client's next call and the user's next move; beside them,",
        "after one 60 000-line review in a Neovim of its own (what a first big review of any size leaves).",
        "",
        "| axis | size | longest stall, ms | goal | met | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        met = "met" if r["met"] else "**missed**"
        if "stall_ms" in r:
            s = r["stall_ms"]
            figure = f"{s['median']} ({s['min']}–{s['max']})"
        elif "stall_ms_median" in r:  # bench/growth_reviews.py's rows: open + accept, the worse
            figure = f"{r['stall_ms_median']} ({r['stall_ms_min']}–{r['stall_ms_max']})"
        else:  # its memory rows
            figure = f"RSS MiB: Neovim {r['nvim_rss_mib']}, host {r['host_rss_mib']}"
        out.append(f"| {r['axis']} | {r['size']} | {figure} | {r['goal']} | {met} | {r.get('note', '')} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    # (git processes the plugin started may still be finishing in the trees when they go)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        base = Path(tmp)
        rows += selection(base, args.runs)
        rows.append(send(base, args.runs, 200_000))
        rows.append(send(base, args.runs, 1_000_000))
        rows.append(changes(base, args.runs, 50_000))
        rows.append(changes(base, args.runs, 100_000))  # "scan 100 k files with no stall over 50 ms"
    rows += growth_reviews.measure(runs=args.runs)
    (ROOT / "bench" / "growth.json").write_text(json.dumps(rows, indent=2) + "\n")
    (ROOT / "bench" / "growth.md").write_text(render(rows))
    print(render(rows))


if __name__ == "__main__":
    main()
