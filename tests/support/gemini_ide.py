"""Gemini CLI's own IdeClient against a test's Neovim, and the review it opens (shared by the review
tests)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver, ide_client_env

PENDING = "return vim.tbl_map(function(d) return d.path end, require('gemini_companion.review').pending())"


@contextlib.contextmanager
def ide_client(nvim: Neovim) -> Iterator[NodeDriver]:
    nvim.wait_discovery()
    nvim.wait_state("running")
    with NodeDriver(
        "ide_client.mjs", cwd=nvim.workspace, env=ide_client_env(nvim.env), log_dir=nvim.base
    ) as ide:
        done = ide.wait_event(lambda e: e.get("event") == "connect_done", what="connect_done")
        assert done["status"] == "connected", done
        assert done["diffingEnabled"] is True
        yield ide


def open_diff(ide: NodeDriver, path: Path, content: str) -> int:
    reply = ide.send("open_diff", path=str(path), content=content)
    assert reply["ok"] and reply.get("started")
    return int(reply["id"])


def diff_result(ide: NodeDriver, cmd_id: int, timeout: float = 20) -> dict[str, Any]:
    ev = ide.wait_event(
        lambda e: e.get("event") in ("diff_result", "diff_error") and e.get("id") == cmd_id,
        timeout,
        what=f"diff result {cmd_id}",
    )
    assert ev["event"] == "diff_result", ev
    result: dict[str, Any] = ev["result"]
    return result


def proposed_buf(nvim: Neovim, path: Path) -> int:
    return int(
        wait_for(
            lambda: nvim.lua(
                "for _, d in ipairs(require('gemini_companion.review').pending()) do"
                " if d.path == ... then return d.proposed_buf end end",
                str(path),
            ),
            what="diff view",
        )
    )
