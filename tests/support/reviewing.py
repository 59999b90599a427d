"""Reviews driven through a generic MCP client (the TypeScript SDK), and the changes review's quickfix
list."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver

ORPHANED = "return vim.tbl_map(function(d) return d.path end, require('gemini_companion.review').orphaned())"


@contextlib.contextmanager
def mcp_session(nvim: Neovim) -> Iterator[NodeDriver]:
    """A generic MCP client (the TypeScript SDK): several openDiff calls at once, its own session."""
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    with NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=nvim.base) as ts:
        ts.wait_event(lambda e: e.get("event") == "connected", what="connected")
        yield ts


def call(ts: NodeDriver, name: str, **args: Any) -> dict[str, Any]:
    reply = ts.send("call", name=name, args=args)
    assert reply["ok"], reply
    result: dict[str, Any] = reply["result"]
    return result


def outcome(ts: NodeDriver, path: str) -> dict[str, Any]:
    """The ide/diffAccepted or ide/diffRejected notification for `path` (the client's own string)."""
    return ts.wait_event(
        lambda e: (
            e.get("event") == "notification"
            and e.get("method") in ("ide/diffAccepted", "ide/diffRejected")
            and e["params"]["filePath"] == path
        ),
        what=f"outcome for {path}",
    )


def messages_since(nvim: Neovim, count: int) -> list[str]:
    return [str(n[0]) for n in nvim.notifications()[count:]]


def edit_proposal(nvim: Neovim, buf: int, line: str) -> None:
    """Type a new first line into the proposal, as a user would."""
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
    nvim.api.input(f"ggO{line}<Esc>")
    wait_for(lambda: nvim.api.buffers[buf][0] == line, what="typed edit")


QF = """
return vim.tbl_map(function(i)
  return { vim.fn.fnamemodify(vim.fn.bufname(i.bufnr), ':.'), i.lnum, i.text }
end, vim.fn.getqflist())
"""


def changes_listed(nvim: Neovim) -> list[list[object]]:
    """:GeminiChanges, once its scan is done (at once, or after a few slices): the quickfix list."""
    before = len(nvim.notifications())
    nvim.api.command("call setqflist([], 'f') | GeminiChanges")
    wait_for(lambda: nvim.lua(QF) or len(nvim.notifications()) > before, what="the scan done")
    listed: list[list[object]] = nvim.lua(QF)
    return listed


def snapshot_taken(nvim: Neovim, files: int) -> None:
    """Wait until the workspace snapshot holds `files` files (what :GeminiChanges says)."""
    watched = f"{files} file{'s' if files != 1 else ''} watched"
    said = f"gemini-companion: no file changed on disk without a review ({watched})"
    wait_for(lambda: not changes_listed(nvim) and nvim.notifications()[-1][0] == said, what=said)
