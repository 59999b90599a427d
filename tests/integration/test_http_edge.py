"""The host's memory after big requests (needs the real host process; the HTTP edge's SDK workarounds
seen from a client are in tests/protocol/test_http_edge.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import McpHttp


def _resident_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return next(int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:"))


def test_big_requests_give_their_memory_back(nvim: Neovim) -> None:
    """Reviews of long files (~0.9 MB openDiff bodies) leave the host where it was: the C
    allocator would otherwise keep ~1 MiB of each, for as long as Neovim runs."""
    disc = nvim.wait_discovery()
    host = int(nvim.server_state()["host_pid"])
    client = McpHttp(disc.port, disc.token)
    client.initialize()
    target = nvim.workspace / "long.py"
    target.write_text("".join(f"value_{i} = {i}\n" for i in range(50_000)))
    proposal = "".join(f"value_{i} = {i * 2}\n" for i in range(50_000))

    def pending() -> int:
        return int(nvim.lua("return #require('gemini_companion.review').pending()"))

    def review() -> None:
        client.call("openDiff", {"filePath": str(target), "newContent": proposal})
        wait_for(lambda: pending() == 1, 10, what="the review open")
        nvim.lua("vim.cmd('GeminiReject')")
        wait_for(lambda: pending() == 0, 10, what="the review closed")

    review()  # the first one loads what every review uses
    before = _resident_mib(host)
    for _ in range(8):
        review()
    wait_for(lambda: _resident_mib(host) <= before + 3, 10, what=f"the host back near {before:.1f} MiB")
    client.close()
