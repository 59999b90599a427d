"""A review never takes what is the user's: the keys they are typing when it arrives, what they saved
while it was open, their file's line ends, their own diff windows and options, their edits to a
proposal the same session replaces. Typed as a user types, asserted as what the client receives.
Here what needs a real client: keys typed while a review arrives over RPC, Claude's FILE_SAVED answer,
and the user's own diff windows (its spec case did not match yet); the rest is
tests/lua/review_guards_spec.lua, with the host stubbed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.claude_ide import claude_like, lock_of, open_diff_args, port_of, proposed_buffer, texts
from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import messages_since

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


# -- the user's own diff windows (the rest of this file's UI checks: tests/lua/review_guards_spec.lua) ---


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
