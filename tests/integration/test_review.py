"""Reviewing proposed edits as a Vim user does, and as a shared machine requires.

Habits (`:w`/`:x`/`ZZ` accept, `:q` rejects without E37, one short line each, relative paths and
`%`), new folders, and what no other party can do: accept without an explicit write, flood the
editor with proposals, close or replace another session's review, or lose the user's edits
when a session ends. Driven by Gemini CLI's own IdeClient and the MCP TypeScript SDK client.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver
from tests.support.reviewing import ORPHANED, call, edit_proposal, mcp_session, messages_since, outcome


@pytest.fixture
def project(nvim: Neovim) -> Path:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\ntwo\n")
    (ws / "b.py").write_text("bee\n")
    return ws


def error_text(result: dict[str, Any]) -> str:
    assert result.get("isError") is True, result
    return str(result["content"][0]["text"])


def rejections(ts: NodeDriver, path: str) -> int:
    """How many ide/diffRejected notifications for `path` the client has received so far."""
    return sum(
        1
        for e in list(ts.events)
        if e.get("event") == "notification"
        and e.get("method") == "ide/diffRejected"
        and e["params"]["filePath"] == path
    )


# -- issue 14.3: new folders ----------------------------------------------------------------


def test_a_new_file_in_new_folders_is_reviewed_and_nothing_is_created(nvim: Neovim, project: Path) -> None:
    target = project / "src" / "new" / "x.py"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "x = 1\n")
        buf = proposed_buf(nvim, target)
        assert nvim.api.buffers[buf].name == f"{target} (new file)"
        original = nvim.lua("return require('gemini_companion.review').pending()[1].original_buf")
        assert nvim.api.buffers[original][:] == [""]  # diffed against empty text
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "x = 1\n"}
    assert not (project / "src").exists()  # Gemini CLI creates the folders, never we


# -- issue 14.6: review habits --------------------------------------------------------------


@pytest.mark.parametrize("keys", [":w<CR>", ":x<CR>", "ZZ", ":wq<CR>", ":update<CR>"])
@pytest.mark.parametrize("edited", [False, True], ids=["unedited", "edited"])
def test_w_x_and_ZZ_accept_with_one_short_line(nvim: Neovim, project: Path, keys: str, edited: bool) -> None:
    target = project / "a.py"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        if edited:
            edit_proposal(nvim, buf, "zero")
        seen = len(nvim.notifications())
        nvim.api.input(keys)
        expected = ("zero\n" if edited else "") + "one\nTWO\n"
        assert diff_result(ide, cmd) == {"status": "accepted", "content": expected}
        wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
        assert messages_since(nvim, seen) == ["gemini-companion: accepted the edit to a.py"]
    assert target.read_text() == "one\ntwo\n"


@pytest.mark.parametrize("how", ["quit", "close", "tabclose"])
def test_quit_on_an_edited_proposal_rejects_without_E37(nvim: Neovim, project: Path, how: str) -> None:
    target = project / "a.py"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        edit_proposal(nvim, buf, "zero")
        seen = len(nvim.notifications())
        nvim.api.command(how)  # raised E37 ("No write since last change") before
        assert diff_result(ide, cmd) == {"status": "rejected"}
        wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
        assert not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf)
        assert (
            nvim.lua("return vim.fn.exists(...)", f"#gemini_companion_diff_{buf}") == 0
        )  # its autocmd group too
        assert messages_since(nvim, seen) == ["gemini-companion: rejected the edit to a.py"]


def test_writing_a_proposal_to_another_file_neither_accepts_nor_writes(nvim: Neovim, project: Path) -> None:
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", "one\nTWO\n")
        proposed_buf(nvim, project / "a.py")
        nvim.api.command(f"write {project / 'copy.py'}")
        assert not (project / "copy.py").exists()
        assert nvim.lua(PENDING) == [str(project / "a.py")]
        assert "not written: a.py is a proposal" in messages_since(nvim, 0)[-1]
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "one\nTWO\n"}


def test_a_proposal_identical_to_the_file_says_no_changes(nvim: Neovim, project: Path) -> None:
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", "one\ntwo\n")
        proposed_buf(nvim, project / "a.py")
        wait_for(
            lambda: (
                "gemini-companion: a.py: no changes (the proposal is the same as the file)"
                in messages_since(nvim, 0)
            ),
            what="no changes message",
        )
        nvim.api.command("GeminiReject")
        assert diff_result(ide, cmd) == {"status": "rejected"}
    assert not [m for m in messages_since(nvim, 0) if "no changes" in m and "b.py" in m]


@pytest.mark.parametrize(
    ("proposal", "line"),
    [("ONE\ntwo\n", 1), ("one\nTWO\n", 2), ("one\ntwo\nthree\n", 3), ("one\n", 1), ("ONE\ntwo\nthree\n", 1)],
    ids=["first line", "second line", "added at the end", "deleted at the end", "first of two"],
)
def test_the_cursor_lands_on_the_first_change(nvim: Neovim, project: Path, proposal: str, line: int) -> None:
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", proposal)
        buf = proposed_buf(nvim, project / "a.py")
        wait_for(lambda: nvim.api.current.buffer.number == buf, what="focus on the proposal")
        assert nvim.api.current.window.cursor[0] == line
        nvim.api.command("GeminiReject")
        assert diff_result(ide, cmd) == {"status": "rejected"}


def test_the_cursor_lands_on_a_change_far_into_the_file(nvim: Neovim, project: Path) -> None:
    # Past the 4 KiB blocks the two texts are compared in, and on a block's edge.
    lines = [f"line {i}" for i in range(1, 2001)]
    (project / "long.py").write_text("\n".join(lines) + "\n")
    assert len("\n".join(lines[:467])) + 1 == 4095  # line 468 starts with the first block's last byte
    for changed in (1500, 468):
        proposal = lines.copy()
        proposal[changed - 1] = "CHANGED"
        proposal[1899] = "ALSO CHANGED"
        with ide_client(nvim) as ide:
            cmd = open_diff(ide, project / "long.py", "\n".join(proposal) + "\n")
            buf = proposed_buf(nvim, project / "long.py")
            wait_for(lambda b=buf: nvim.api.current.buffer.number == b, what="focus on the proposal")
            assert nvim.api.current.window.cursor[0] == changed
            nvim.api.command("GeminiReject")
            assert diff_result(ide, cmd) == {"status": "rejected"}


def test_accept_and_reject_take_relative_paths_and_percent(nvim: Neovim, project: Path) -> None:
    (project / "sub").mkdir()
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", "A\n")
        proposed_buf(nvim, project / "a.py")
        nvim.api.command("GeminiReject %")  # % is the proposal buffer's name
        assert diff_result(ide, cmd) == {"status": "rejected"}

        cmd = open_diff(ide, project / "a.py", "A\n")
        proposed_buf(nvim, project / "a.py")
        nvim.api.command("wincmd h")  # % is the on-disk side's name
        nvim.api.command("GeminiAccept %")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "A\n"}

        cmd = open_diff(ide, project / "a.py", "A\n")
        proposed_buf(nvim, project / "a.py")
        nvim.api.command("tabfirst")  # elsewhere, naming the file as the user would
        nvim.api.command("GeminiAccept sub/../a.py")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "A\n"}

        cmd = open_diff(ide, project / "b.py", "B\n")
        proposed_buf(nvim, project / "b.py")
        nvim.api.command("tabfirst")
        nvim.api.command("GeminiReject a.py")  # not under review: says so, touches nothing
        assert any("no proposed edit to reject for a.py" in m for m in messages_since(nvim, 0))
        nvim.api.command("GeminiReject ./b.py")
        assert diff_result(ide, cmd) == {"status": "rejected"}


# -- issue 15.6: only an explicit write accepts ----------------------------------------------

# What an auto-save plugin does (okuuva/auto-save.nvim without its debounce: the worst case).
AUTO_SAVE = """
vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'InsertLeave', 'BufLeave' }, {
  callback = function(ev)
    if vim.bo[ev.buf].modified and vim.bo[ev.buf].modifiable then
      vim.api.nvim_buf_call(ev.buf, function() vim.cmd('silent! write') end)
    end
  end,
})
"""


def test_wa_autowriteall_and_auto_save_never_accept(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=AUTO_SAVE)
    ws = nvim.workspace
    (ws / "a.py").write_text("one\n")
    (ws / "b.py").write_text("bee\n")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, ws / "a.py", "ONE\n")
        buf = proposed_buf(nvim, ws / "a.py")
        edit_proposal(nvim, buf, "typed")  # the auto-save autocmds ran on every change
        assert nvim.lua(PENDING) == [str(ws / "a.py")]
        nvim.api.command("tabfirst | edit b.py")
        nvim.api.current.buffer[0] = "bee edited"
        nvim.api.command("wall")
        assert (ws / "b.py").read_text() == "bee edited\n"  # :wa wrote the user's file…
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
        nvim.api.command("wall")  # …and not the proposal, even from inside it
        nvim.api.command("set autowriteall")
        nvim.api.input("Atoo<Esc>")
        wait_for(lambda: nvim.api.buffers[buf][0] == "typedtoo", what="typed")
        nvim.api.command("quit")  # with 'autowriteall' this used to write (accept) first
        assert diff_result(ide, cmd) == {"status": "rejected"}
        assert not [
            e for e in ide.events if e.get("event") == "diff_result" and e["result"]["status"] != "rejected"
        ]


@pytest.mark.parametrize("command", ["wqall", "xall"])
def test_wqa_and_xa_never_accept(nvim: Neovim, project: Path, command: str) -> None:
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", "ONE\n")
        buf = proposed_buf(nvim, project / "a.py")
        edit_proposal(nvim, buf, "typed")
        # An unnamed buffer with text keeps Neovim open (E141) after it wrote what it could.
        nvim.lua("vim.api.nvim_buf_set_lines(vim.api.nvim_create_buf(true, false), 0, -1, false, { 'x' })")
        with pytest.raises(pynvim.NvimError, match="E141"):
            nvim.api.command(command)
        assert nvim.lua(PENDING) == [str(project / "a.py")]
        nvim.api.command("GeminiReject")
        assert diff_result(ide, cmd) == {"status": "rejected"}


# -- issue 15.7: caps ---------------------------------------------------------------------------

MiB = 1 << 20
# `make stress` (STRESS=1) floods with the full count (bench/reliability.md).
FLOOD = 1000 if os.environ.get("STRESS") == "1" else 40


def test_a_flood_of_proposals_opens_no_more_than_the_default_cap(nvim: Neovim) -> None:
    """A buggy or hostile agent proposing without end: the user gets at most review.max_pending_per_session
    (8) tabs, every further call is refused in words, and Neovim stays responsive."""
    ws = nvim.workspace
    tabs_before = nvim.lua("return #vim.api.nvim_list_tabpages()")
    with mcp_session(nvim) as agent:
        refused = 0
        for i in range(FLOOD):
            result = call(agent, "openDiff", filePath=str(ws / f"flood{i}.py"), newContent=f"{i}\n")
            if result.get("isError"):
                assert "review.max_pending_per_session" in error_text(result)
                refused += 1
        assert refused == FLOOD - 8
        assert len(nvim.lua(PENDING)) == 8
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs_before + 8
        assert nvim.api.eval("1 + 1") == 2
    assert not list(ws.glob("flood*.py"))  # nothing was written


def test_pending_proposals_are_capped_per_session_and_in_total(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua=f"""
        require('gemini_companion').setup({{ review = {{
          new_tab = false, focus = false,
          max_pending_per_session = 2, max_pending = 3,
          max_pending_bytes_per_session = {MiB}, max_pending_bytes = {3 * MiB // 2},
        }} }})
        """
    )
    ws = nvim.workspace
    with mcp_session(nvim) as a, mcp_session(nvim) as b, mcp_session(nvim) as c:
        assert call(a, "openDiff", filePath=str(ws / "a1"), newContent="1\n") == {"content": []}
        call(a, "openDiff", filePath=str(ws / "a2"), newContent="2\n")
        text = error_text(call(a, "openDiff", filePath=str(ws / "a3"), newContent="3\n"))
        assert "too many proposals wait for review (2 for this session" in text
        assert "review.max_pending_per_session" in text
        call(b, "openDiff", filePath=str(ws / "b1"), newContent="1\n")
        text = error_text(call(c, "openDiff", filePath=str(ws / "c1"), newContent="1\n"))
        assert "(3 for all sessions together, setting review.max_pending)" in text
        # A session's replacement of its own review does not count twice.
        call(a, "openDiff", filePath=str(ws / "a1"), newContent="1 again\n")
        assert sorted(nvim.lua(PENDING)) == [str(ws / n) for n in ("a1", "a2", "b1")]

        nvim.api.command("GeminiRejectAll")
        # The server counts a review until the rejection reaches it: wait for the clients to be told
        # (a1 twice: replaced, then rejected).
        wait_for(
            lambda: (
                rejections(a, str(ws / "a1")) == 2
                and rejections(a, str(ws / "a2")) == 1
                and rejections(b, str(ws / "b1")) == 1
            ),
            what="the rejections reach their clients",
        )
        big = "x" * (600 * 1024)
        call(a, "openDiff", filePath=str(ws / "big1"), newContent=big)
        text = error_text(call(a, "openDiff", filePath=str(ws / "big2"), newContent=big))
        assert f"over the {MiB} allowed for this session (setting review.max_pending_bytes_per_session)" in (
            text
        )
        call(b, "openDiff", filePath=str(ws / "big3"), newContent=big)
        text = error_text(call(c, "openDiff", filePath=str(ws / "big4"), newContent=big))
        assert "allowed for all sessions together (setting review.max_pending_bytes)" in text
        assert sorted(nvim.lua(PENDING)) == [str(ws / "big1"), str(ws / "big3")]


# -- issue 15.8: a review belongs to its session ----------------------------------------------------


def test_only_the_owning_session_closes_or_replaces_its_review(nvim: Neovim, project: Path) -> None:
    target = project / "a.py"
    with ide_client(nvim) as ide, mcp_session(nvim) as other:
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        edit_proposal(nvim, buf, "mine")
        text = error_text(call(other, "closeDiff", filePath=str(target)))
        assert "belongs to another session" in text
        text = error_text(call(other, "openDiff", filePath=str(target), newContent="theirs\n"))
        assert "is under review for another session: try again after" in text
        assert nvim.lua(PENDING) == [str(target)]
        assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]  # the user's edit is intact
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "mine\none\nTWO\n"}
        assert not [e for e in other.events if e.get("event") == "notification" and "diff" in e["method"]]


# -- issue 15.9: the user's edits outlive the session ------------------------------------------------


def test_an_edited_proposal_outlives_its_session_as_an_orphan(nvim: Neovim, project: Path) -> None:
    a, b = project / "a.py", project / "b.py"
    with mcp_session(nvim) as ts:
        call(ts, "openDiff", filePath=str(a), newContent="one\nTWO\n")
        call(ts, "openDiff", filePath=str(b), newContent="BEE\n")
        buf = proposed_buf(nvim, a)
        proposed_buf(nvim, b)
        edit_proposal(nvim, buf, "mine")
        seen = len(nvim.notifications())
        assert ts.send("close", terminate=True)["ok"]  # HTTP DELETE: the session ends
    wait_for(lambda: nvim.lua(PENDING) == [], what="reviews released")
    assert nvim.lua(ORPHANED) == [str(a)]
    assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]
    assert nvim.api.buffers[buf].name == f"{a} (orphaned proposal)"
    notes = wait_for(lambda: len(m := messages_since(nvim, seen)) == 2 and m, what="two messages")
    assert "closed the review of b.py: the session that proposed it ended" in notes[0] + notes[1]
    orphan_note = next(m for m in notes if "a.py" in m)
    assert f"stays open in buffer {buf}" in orphan_note and ":w {file} saves a copy" in orphan_note

    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
    with pytest.raises(pynvim.NvimError, match="E382"):
        nvim.api.command("write")  # nothing can accept it, and the file is not written
    assert a.read_text() == "one\ntwo\n"
    nvim.api.command(f"write {project / 'saved.py'}")  # a copy where the user says
    assert (project / "saved.py").read_text() == "mine\none\nTWO\n"
    nvim.api.command("GeminiReviews")  # the list of reviews (:GeminiReviews) names it orphaned
    assert [line.split()[:5] for line in nvim.api.current.buffer[:]] == [
        ["a.py", "(orphaned:", "its", "session", "ended)"]
    ]
    nvim.api.command("close")

    # A new proposal for the same file opens beside it, with its own (writable) name.
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, a, "new\n")
        new_buf = proposed_buf(nvim, a)
        assert nvim.api.buffers[new_buf].name == f"{a} (proposed)"
        assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "new\n"}
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
    nvim.api.command("quit")  # no E37: the orphan is discarded
    wait_for(lambda: nvim.lua(ORPHANED) == [], what="orphan discarded")
    assert "discarded your edited proposal for a.py" in messages_since(nvim, 0)[-1]


def test_stopping_the_server_keeps_an_edited_proposal(nvim: Neovim, project: Path) -> None:
    with ide_client(nvim) as ide:
        open_diff(ide, project / "a.py", "one\nTWO\n")
        buf = proposed_buf(nvim, project / "a.py")
        edit_proposal(nvim, buf, "mine")
        nvim.api.command("GeminiStop")
        wait_for(lambda: nvim.lua(ORPHANED) == [str(project / "a.py")], what="orphaned")
    assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]
    assert any(f"stays open in buffer {buf}" in m for m in messages_since(nvim, 0))


# -- issue 15.10: aliased paths ----------------------------------------------------------------


def test_aliased_paths_are_one_review_and_each_answer_echoes_the_clients_string(
    nvim: Neovim, project: Path
) -> None:
    dotted, doubled = f"{project}/./a.py", f"{project}//a.py"
    with mcp_session(nvim) as ts:
        call(ts, "openDiff", filePath=dotted, newContent="first\n")
        proposed_buf(nvim, project / "a.py")
        call(ts, "openDiff", filePath=doubled, newContent="second\n")  # the same file: replaces
        assert outcome(ts, dotted)["method"] == "ide/diffRejected"
        buf = wait_for(
            lambda: (
                (b := proposed_buf(nvim, project / "a.py")) and nvim.api.buffers[b][:] == ["second"] and b
            ),
            what="second proposal shown",
        )
        assert nvim.lua(PENDING) == [str(project / "a.py")]
        assert nvim.api.buffers[buf].name == f"{project / 'a.py'} (proposed)"
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
        nvim.api.command("write")  # E32 (no file name) before
        accepted = outcome(ts, doubled)
        assert accepted["method"] == "ide/diffAccepted" and accepted["params"]["content"] == "second\n"
        nvim.api.command("GeminiReviews")
        assert messages_since(nvim, 0)[-1] == "gemini-companion: no pending reviews"


def test_undo_in_a_fresh_proposal_does_not_empty_it(nvim: Neovim, project: Path) -> None:
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, project / "a.py", "one\nTWO\n")
        buf = proposed_buf(nvim, project / "a.py")
        nvim.api.command("normal! u")  # went back to an empty buffer before
        assert nvim.api.buffers[buf][:] == ["one", "TWO"]
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "one\nTWO\n"}
