"""A review never takes what is the user's: the keys they are typing when it arrives, what they saved
while it was open, their file's line ends, their own diff windows and options, their edits to a
proposal the same session replaces. Typed as a user types, asserted as what the client receives."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.claude_ide import claude_like, lock_of, open_diff_args, port_of, proposed_buffer, texts
from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import ORPHANED, call, edit_proposal, mcp_session, messages_since, outcome

MODE = "return vim.api.nvim_get_mode().mode"


def in_proposal(nvim: Neovim, buf: int) -> None:
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)


# -- a review arriving while the user types -------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "mode", "after", "mine"),
    [
        ("A hello", "i", " world<Esc>", ["my code hello world", "line 2"]),
        (":w", "c", "<CR>", ["my code changed", "line 2"]),
        ("Vj", "V", "d", [""]),
        ("d", "no", "d", ["line 2"]),
        ("Rxy", "R", "z<Esc>", ["xyzcode", "line 2"]),
    ],
    ids=["insert", "cmdline", "visual", "operator-pending", "replace"],
)
def test_a_review_arriving_while_typing_never_takes_the_keys(
    nvim: Neovim, before: str, mode: str, after: str, mine: list[str]
) -> None:
    ws = nvim.workspace
    (ws / "mine.txt").write_text("my code\nline 2\n")
    target = ws / "c.txt"
    target.write_text("one\ntwo\n")
    nvim.api.command("edit mine.txt")
    if mode == "c":  # typing `:w` for their own change
        nvim.api.command("call setline(1, 'my code changed')")
    mine_win = nvim.api.current.window.handle
    with ide_client(nvim) as ide:
        nvim.api.input(before)
        wait_for(lambda: nvim.lua(MODE) == mode, what=f"mode {mode}")
        seen = len(nvim.notifications())
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        nvim.api.input(after)
        wait_for(lambda: nvim.lua(MODE) == "n", what="back in Normal mode")
        assert nvim.api.current.window.handle == mine_win  # still where they were typing
        assert nvim.api.current.buffer[:] == mine
        assert nvim.api.buffers[buf][:] == ["one", "TWO"]  # no key of theirs reached the proposal
        assert messages_since(nvim, seen)[0] == "gemini-companion: review of c.txt opened in tab 2"
        assert nvim.lua(PENDING) == [str(target)]  # nothing accepted unseen
        if mode == "c":
            assert (ws / "mine.txt").read_text() == "my code changed\nline 2\n"  # their :w saved their file
        nvim.api.command("tabnext")
        assert nvim.api.current.buffer.number == buf
        assert nvim.api.current.window.cursor[0] == 2  # on the first change, ready to review
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "one\nTWO\n"}


# -- saved while the review was open --------------------------------------------------------------


@pytest.mark.parametrize("accept", [":w<CR>", ":wq<CR>", ":GeminiAccept<CR>"])
def test_accept_is_refused_once_the_file_changed_on_disk_and_shows_it(nvim: Neovim, accept: str) -> None:
    target = nvim.workspace / "c.txt"
    target.write_text("one\ntwo\nthree\nfour\nfive\n")
    nvim.api.command("edit c.txt")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "ONE\ntwo\nthree\nfour\nfive\n")
        buf = proposed_buf(nvim, target)
        in_proposal(nvim, buf)
        nvim.api.input("Gosix<Esc>")  # the user's edit to the proposal
        wait_for(lambda: nvim.api.buffers[buf][-1] == "six", what="typed edit")
        nvim.api.command("tabprevious")
        nvim.api.command("call setline(3, 'three by me') | write")  # the user's own save, review open
        nvim.api.command("tabnext")
        in_proposal(nvim, buf)
        seen = len(nvim.notifications())
        nvim.api.input(accept)
        wait_for(lambda: messages_since(nvim, seen), what="a message")
        assert messages_since(nvim, seen) == [
            "gemini-companion: not accepted: c.txt changed on disk since the proposal opened; the review now"
            " compares with the new text and your proposal is kept: check it and accept again"
        ]
        original = nvim.lua("return require('gemini_companion.review').pending()[1].original_buf")
        assert nvim.api.buffers[original][:] == ["one", "two", "three by me", "four", "five"]
        assert nvim.api.current.buffer.number == buf  # still open (`:wq` did not close it)
        assert nvim.api.buffers[buf][:] == ["ONE", "two", "three", "four", "five", "six"]
        assert not [e for e in ide.events if e.get("event") == "diff_result"]
        # The hunks follow the new text: the user takes their own line back with `do`.
        nvim.api.input("3Gdo")
        wait_for(lambda: nvim.api.buffers[buf][2] == "three by me", what="do")
        nvim.api.input(accept)
        expected = "ONE\ntwo\nthree by me\nfour\nfive\nsix\n"
        assert diff_result(ide, cmd) == {"status": "accepted", "content": expected}


def test_claude_open_diff_is_refused_while_the_file_changed_on_disk(nvim: Neovim) -> None:
    target = nvim.workspace / "f.txt"
    target.write_text("old\n")
    nvim.wait_state("running")
    token, port = lock_of(nvim)[1]["authToken"], port_of(nvim)

    async def run() -> tuple[bool, list[str], dict[str, Any]]:
        async with claude_like(port, token) as claude:
            call = claude.start(
                "tools/call", {"name": "openDiff", "arguments": open_diff_args(target, "new\n")}
            )
            buf = await asyncio.to_thread(proposed_buffer, nvim)
            target.write_text("saved meanwhile\n")
            write = "vim.api.nvim_buf_call(..., function() vim.cmd('write') end)"
            await asyncio.to_thread(nvim.lua, write, buf)
            await asyncio.sleep(0.3)  # proves nothing was answered within a window
            refused = not call.done()
            lines = await asyncio.to_thread(lambda: nvim.api.buffers[buf][:])
            await asyncio.to_thread(nvim.lua, write, buf)
            return refused, lines, (await call)["result"]

    refused, lines, result = asyncio.run(run())
    assert refused and lines == ["new"]
    assert texts(result) == ["FILE_SAVED", "new\n"]


# -- by name, with an on-disk window closed ---------------------------------------------------------


def test_accept_and_reject_by_name_after_an_on_disk_window_was_closed(nvim: Neovim) -> None:
    ws = nvim.workspace
    a, b = ws / "a.txt", ws / "b.txt"
    a.write_text("one\n")
    b.write_text("bee\n")
    with ide_client(nvim) as ide, mcp_session(nvim) as agent:
        first = open_diff(ide, a, "ONE\n")
        proposed_buf(nvim, a)
        nvim.api.command("wincmd h | quit")  # make room: the on-disk side of a.txt goes
        call(agent, "openDiff", filePath=str(b), newContent="BEE\n")
        proposed_buf(nvim, b)
        seen = len(nvim.notifications())
        nvim.api.command("GeminiAccept nothing.txt")  # looks at every review: raised E5108 before
        assert messages_since(nvim, seen) == [
            "gemini-companion: no proposed edit to accept for nothing.txt (:GeminiReviews lists them)"
        ]
        nvim.api.command("GeminiReject b.txt")
        assert outcome(agent, str(b))["method"] == "ide/diffRejected"
        nvim.api.command("GeminiAccept a.txt")
        assert diff_result(ide, first) == {"status": "accepted", "content": "ONE\n"}


# -- line ends -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("disk", "proposal", "keys", "expected"),
    [
        (b"one\r\ntwo\r\n", "one\ntwo\nthree\n", "", b"one\r\ntwo\r\nthree\r\n"),
        (b"one\r\ntwo\r\n", "one\ntwo\nthree\n", "dO", b"one\r\ntwo\r\n"),
        (b"one\r\ntwo\r\n", "one\ntwo\n", ":set ff=unix<CR>", b"one\ntwo\n"),
        (b"one\r\ntwo\r\n", "one\ntwo\nthree\n", ":set ff=unix<CR>Gdo", b"one\r\ntwo\r\n"),
        (b"one\ntwo\n", "one\r\nTWO\r\n", "", b"one\nTWO\n"),
    ],
    ids=["kept", "dO", "user takes LF", "drop at end", "LF kept"],
)
def test_line_ends_stay_the_files_unless_the_user_says(
    nvim: Neovim, disk: bytes, proposal: str, keys: str, expected: bytes
) -> None:
    target = nvim.workspace / "c.txt"
    target.write_bytes(disk)
    crlf = disk.count(b"\r") > 0
    said = (
        "differs only in" if proposal.replace("\r", "") == disk.decode().replace("\r", "") else "also changes"
    )
    with ide_client(nvim) as ide:
        seen = len(nvim.notifications())
        cmd = open_diff(ide, target, proposal)
        buf = proposed_buf(nvim, target)
        wait_for(lambda: nvim.api.current.buffer.number == buf, what="focus on the proposal")
        ends = ("CRLF", "LF") if crlf else ("LF", "CRLF")
        take = "unix" if crlf else "dos"
        assert messages_since(nvim, seen) == [
            f"gemini-companion: c.txt: the proposal {said} line ends ({ends[1]}; the file has {ends[0]}),"
            f" kept as the file has them (:set ff={take} in the proposal takes {ends[1]})"
        ]
        nvim.api.input(keys + ":wa<CR>")  # changing 'fileformat' does not make :wa accept
        assert nvim.lua(PENDING) == [str(target)]
        nvim.api.input(":w<CR>")
        result = diff_result(ide, cmd)
    assert result == {"status": "accepted", "content": expected.decode()}


# -- :saveas, the user's own diff windows, 'scrollopt' -------------------------------------------------


@pytest.mark.parametrize("rename", ["saveas copy.txt", "file copy.txt | write"])
def test_saveas_or_file_in_a_proposal_neither_accepts_nor_writes(nvim: Neovim, rename: str) -> None:
    target = nvim.workspace / "c.txt"
    target.write_text("one\n")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "ONE\n")
        buf = proposed_buf(nvim, target)
        name = nvim.api.buffers[buf].name
        seen = len(nvim.notifications())
        nvim.api.command(rename)
        assert messages_since(nvim, seen)[-1] == (
            "gemini-companion: not written: c.txt is a proposal, :w (without a file name) accepts it"
        )
        assert not (nvim.workspace / "copy.txt").exists()
        wait_for(lambda: nvim.api.buffers[buf].name == name, what="the proposal's own name back")
        assert nvim.lua(PENDING) == [str(target)]
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "ONE\n"}


def test_new_tab_false_opens_a_tab_when_the_user_has_a_diff_there(make_nvim: Any) -> None:
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ review = { new_tab = false } })")
    ws = nvim.workspace
    (ws / "u1.txt").write_text("a\nb\nc\n")
    (ws / "u2.txt").write_text("a\nB\nc\n")
    target = ws / "c.txt"
    target.write_text("one\n")
    nvim.api.command("edit u1.txt | diffsplit u2.txt")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "ONE\n")
        proposed_buf(nvim, target)
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
        nvim.api.command("tabfirst | wincmd t | 2")
        nvim.api.command("diffget")  # E101 (more than two buffers in diff mode) before
        assert nvim.api.current.buffer[:] == ["a", "b", "c"]  # u2.txt took line 2 from u1.txt
        nvim.api.command("GeminiAccept c.txt")
        assert diff_result(ide, cmd)["status"] == "accepted"
    wait_for(lambda: nvim.lua("return #vim.api.nvim_list_tabpages()") == 1, what="review closed")
    assert nvim.lua(
        "return vim.tbl_map(function(w) return vim.wo[w].diff end, vim.api.nvim_list_wins())"
    ) == [
        True,
        True,
    ]


@pytest.mark.parametrize("user_hor", [False, True], ids=["default", "user has hor"])
@pytest.mark.parametrize("close", [":w<CR>", ":tabclose<CR>"])
def test_scrollopt_is_as_the_user_had_it_after_a_review(nvim: Neovim, user_hor: bool, close: str) -> None:
    target = nvim.workspace / "c.txt"
    target.write_text("one\n")
    if user_hor:
        nvim.api.command("set scrollopt+=hor")
    before = nvim.lua("return vim.o.scrollopt")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "ONE\n")
        proposed_buf(nvim, target)
        assert "hor" in nvim.lua("return vim.o.scrollopt")  # while it is open, as :diffthis sets it
        nvim.api.input(close)
        diff_result(ide, cmd)
        wait_for(lambda: nvim.lua(PENDING) == [], what="review closed")
    assert nvim.lua("return vim.o.scrollopt") == before


# -- a newer proposal from the same session ---------------------------------------------------------


def test_a_newer_proposal_keeps_the_users_edits_to_the_old_one(nvim: Neovim) -> None:
    target = nvim.workspace / "a.py"
    target.write_text("one\n")
    with mcp_session(nvim) as ts:
        call(ts, "openDiff", filePath=str(target), newContent="ONE\n")
        old = proposed_buf(nvim, target)
        edit_proposal(nvim, old, "mine")
        seen = len(nvim.notifications())
        call(ts, "openDiff", filePath=str(target), newContent="Uno\n")
        assert outcome(ts, str(target))["method"] == "ide/diffRejected"  # the first is answered
        new = wait_for(lambda: (b := proposed_buf(nvim, target)) != old and b, what="the new proposal")
        assert nvim.api.buffers[new][:] == ["Uno"]
        assert nvim.api.buffers[old][:] == ["mine", "ONE"]  # the user's edits are kept
        assert nvim.lua(ORPHANED) == [str(target)]
        assert messages_since(nvim, seen)[0] == (
            "gemini-companion: a newer proposal for a.py arrived, so your edited proposal for a.py stays"
            f" open in buffer {old}: nothing can accept it any more (:w {{file}} saves a copy,"
            " :q discards it)"
        )
