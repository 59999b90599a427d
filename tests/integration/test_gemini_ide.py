"""Gemini CLI IDE mode, judged by Gemini CLI's own IdeClient (@google/gemini-cli-core 0.61.0): the
protocol end to end. What the editor does on its side is in Lua specs: tests/lua/context_editor_spec.lua
(what context.lua sends) and tests/lua/review_ide_spec.lua (closing, closeDiff, the user's buffers); what
the server refuses before Neovim sees it, in tests/protocol/test_gemini_ide_refusals.py.

One Neovim and one connected IdeClient serve the module (each start costs seconds); a test gets them
back reset (tests/support/shared_nvim.py). Tests that stop the server or quit Neovim, or need a
client of their own (a first snapshot, a disconnect), start their own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver
from tests.support.shared_nvim import fresh_editor, shared_neovim


def files_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    ctx = event.get("context") or {}
    files: list[dict[str, Any]] = (ctx.get("workspaceState") or {}).get("openFiles") or []
    return files


def wait_context(ide: NodeDriver, predicate: Any, what: str) -> list[dict[str, Any]]:
    ev = ide.wait_event(
        lambda e: e.get("event") == "context" and e.get("context") is not None and predicate(files_of(e)),
        what=what,
    )
    return files_of(ev)


@pytest.fixture(scope="module")
def shared_nvim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neovim]:
    with shared_neovim(tmp_path_factory.mktemp("gemini_ide")) as nvim:
        yield nvim


@pytest.fixture(scope="module")
def shared_ide(shared_nvim: Neovim) -> Iterator[NodeDriver]:
    with ide_client(shared_nvim) as ide:
        yield ide


@pytest.fixture
def nvim(shared_nvim: Neovim) -> Iterator[Neovim]:
    yield shared_nvim
    fresh_editor(shared_nvim)


@pytest.fixture
def ide(shared_ide: NodeDriver, nvim: Neovim) -> NodeDriver:
    """The module's connected IdeClient, with nothing heard yet in this test."""
    shared_ide.clear_events()
    return shared_ide


@pytest.fixture
def project(nvim: Neovim) -> Path:
    ws = nvim.workspace
    (ws / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (ws / "b.py").write_text("def foo():\n    return 1\n")
    return ws


# -- context ------------------------------------------------------------------------------


def test_context_reaches_the_ide_client_with_cursor_and_selection(
    nvim: Neovim, ide: NodeDriver, project: Path
) -> None:
    # What context.lua sends in each case (MRU order, listed buffers, every Visual mode, the 16k
    # cut): tests/lua/context_editor_spec.lua; what Python makes of it: tests/unit/test_context.py.
    nvim.api.command("edit b.py")
    nvim.api.command("edit a.py")
    nvim.api.input("3GVj")  # Visual-line, left open
    files = wait_context(ide, lambda f: f and f[0].get("selectedText") == "line 3\nline 4", "line sel")
    assert [Path(f["path"]).name for f in files] == ["a.py", "b.py"]
    assert files[0]["isActive"] is True
    assert files[0]["cursor"] == {"line": 4, "character": 1}
    assert not files[1].get("isActive") and "cursor" not in files[1]  # the CLI sets False itself
    assert all(Path(f["path"]).is_absolute() for f in files)
    nvim.api.input("<Esc>")


# -- diffs --------------------------------------------------------------------------------


def test_write_accepts_with_the_users_edits_and_the_file_is_untouched(
    nvim: Neovim, ide: NodeDriver, project: Path
) -> None:
    target = project / "b.py"
    before = target.read_text()
    cmd = open_diff(ide, target, "def foo():\n    return 2\n")
    buf = proposed_buf(nvim, target)
    assert nvim.lua("return vim.bo[...].buftype", buf) == "acwrite"
    assert nvim.lua("return vim.bo[...].filetype", buf) == "python"
    assert nvim.api.current.buffer.number == buf  # focus moved to the proposal
    assert nvim.lua("return vim.wo.diff") is True
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
    # The left side is the file on disk, read-only.
    left = nvim.lua("return vim.b[...].gemini_diff and vim.fn.win_findbuf(...)", buf)
    assert left
    original = nvim.lua("return require('gemini_companion.review').pending()[1].original_buf")
    assert nvim.lua("return vim.bo[...].modifiable", original) is False
    assert nvim.api.buffers[original][:] == ["def foo():", "    return 1"]
    # The user edits the proposal, then :w
    nvim.api.buffers[buf].append("# reviewed")
    nvim.api.command("write")
    result = diff_result(ide, cmd)
    assert result == {"status": "accepted", "content": "def foo():\n    return 2\n# reviewed\n"}
    assert target.read_text() == before  # the plugin never writes the file
    wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf)


def test_quitting_the_review_rejects_exactly_once(nvim: Neovim, ide: NodeDriver, project: Path) -> None:
    # Every other way of closing: tests/lua/review_ide_spec.lua.
    target = project / "a.py"
    cmd = open_diff(ide, target, "changed\n")
    proposed_buf(nvim, target)
    nvim.api.command("quit")
    assert diff_result(ide, cmd) == {"status": "rejected"}
    wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
    time.sleep(0.3)  # proves nothing happened within a window: no second result
    results = [e for e in ide.events if e.get("event") in ("diff_result", "diff_error")]
    assert len(results) == 1
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_answer_in_the_cli_closes_the_view_and_returns_the_current_text(
    nvim: Neovim, ide: NodeDriver, project: Path
) -> None:
    target = project / "b.py"
    cmd = open_diff(ide, target, "proposed\n")
    buf = proposed_buf(nvim, target)
    nvim.api.buffers[buf][0] = "edited in neovim"
    reply = ide.send("resolve_from_cli", path=str(target), outcome="accepted")
    assert reply["ok"]
    result = diff_result(ide, cmd)
    assert result == {"status": "accepted", "content": "edited in neovim\n"}
    target.write_text(result["content"])  # what gemini does after a yes in its own prompt
    wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
    wait_for(lambda: not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf), what="the view gone")
    assert nvim.lua("return #require('gemini_companion.review').orphaned()") == 0


def test_new_file_and_two_pending_diffs_from_two_clients(
    nvim: Neovim, ide: NodeDriver, project: Path
) -> None:
    # One CLI session has one diff at a time (it holds a mutex); two CLIs can have one each.
    new = project / "pkg" / "new.py"
    new.parent.mkdir()
    with ide_client(nvim) as other:
        first = open_diff(ide, new, "x = 1\n")
        buf = proposed_buf(nvim, new)
        assert nvim.api.buffers[buf].name.endswith("new.py (new file)")
        original = nvim.lua("return require('gemini_companion.review').pending()[1].original_buf")
        assert nvim.api.buffers[original][:] == [""]
        second = open_diff(other, project / "a.py", "replaced\n")
        proposed_buf(nvim, project / "a.py")
        assert sorted(nvim.lua(PENDING)) == sorted([str(new), str(project / "a.py")])
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)  # go to its tab
        nvim.api.command("write")
        assert diff_result(ide, first) == {"status": "accepted", "content": "x = 1\n"}
        assert not new.exists()
        assert nvim.lua(PENDING) == [str(project / "a.py")]
        nvim.api.command("GeminiRejectAll")
        assert diff_result(other, second) == {"status": "rejected"}
        time.sleep(
            0.3
        )  # proves nothing happened within a window: the first client hears nothing of the second file
        assert [e for e in ide.events if e.get("event") == "diff_result"] == [
            {"event": "diff_result", "id": first, "result": {"status": "accepted", "content": "x = 1\n"}}
        ]


def test_disconnecting_client_closes_its_diffs(nvim: Neovim, project: Path) -> None:
    with ide_client(nvim) as ide:
        open_diff(ide, project / "a.py", "x\n")
        proposed_buf(nvim, project / "a.py")
        ide.send("disconnect")
    wait_for(lambda: nvim.lua(PENDING) == [], what="diff closed after disconnect")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_large_proposals_open(nvim: Neovim, ide: NodeDriver, project: Path) -> None:
    big = project / "big.txt"
    big.write_text("".join(f"original line {i}\n" for i in range(100_000)))
    content = "".join(f"proposed line {i} with some more text\n" for i in range(200_000))  # ~7.6 MB
    cmd = open_diff(ide, big, content)
    buf = proposed_buf(nvim, big)
    # A big review fills in slices after it opens (tests/lua/review_big_spec.lua).
    wait_for(lambda: nvim.lua("return vim.api.nvim_buf_line_count(...)", buf) == 200_000, what="filled")
    nvim.api.command("GeminiReject")
    assert diff_result(ide, cmd) == {"status": "rejected"}
    # Oversized ones, refused before Neovim sees them: tests/protocol/test_gemini_ide_refusals.py.
    wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
    assert nvim.lua("return 1 + 1") == 2


def test_snapshot_arrives_when_the_stream_opens(nvim: Neovim, project: Path) -> None:
    nvim.api.command("edit b.py")
    with ide_client(nvim) as ide:  # no editor activity after connecting
        files = wait_context(ide, bool, "initial snapshot")
        assert Path(files[0]["path"]).name == "b.py"


@pytest.mark.parametrize("how", ["GeminiStop", "quit"])
def test_stopping_with_a_client_connected_leaves_no_task_behind(make_nvim: Any, how: str) -> None:
    nvim: Neovim = make_nvim()  # its own: it stops the server
    with ide_client(nvim) as ide:
        wait_context(ide, lambda files: True, "first context")
        if how == "quit":
            assert nvim.quit() == 0
        else:
            nvim.api.command("GeminiStop")
            nvim.wait_state("stopped")
    # A task destroyed while pending is a piece of the session nobody ended (asyncio logs it).
    wait_for(lambda: "stopped" in nvim.log_text(), what="the host's last words")
    assert "event loop:" not in nvim.log_text()
