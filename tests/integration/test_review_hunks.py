"""Per-hunk decisions in a proposal, the events they fire, and the list of pending reviews: typed as
a user types them, asserted as what the client receives and what is on disk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import call, mcp_session, outcome


def focus_proposal(nvim: Neovim, path: Path) -> int:
    buf = proposed_buf(nvim, path)
    wait_for(lambda: nvim.api.current.buffer.number == buf, what="focus on the proposal")
    return buf


@pytest.mark.parametrize(
    ("disk", "proposal", "keys", "expected"),
    [
        (b"one\ntwo\nthree\nfour\n", "one\nTWO\nthree\nFOUR\nfive\n", "do", "one\ntwo\nthree\nFOUR\nfive\n"),
        (b"one\ntwo\nthree\nfour\n", "one\nTWO\nthree\nFOUR\nfive\n", "dpdo", "one\nTWO\nthree\nfour\n"),
        (b"one\ntwo\nthree\n", "one\nTWO\nthree\nfour\n", "]cdo[cdp", "one\nTWO\nthree\n"),
        (None, "x = 1\ny = 2\n", "dO", ""),
        (b"one\ntwo\n", "", "do", "one\ntwo\n"),
        (b"one\r\ntwo\r\n", "one\r\nTWO\r\nthree\r\n", "dodo", "one\r\ntwo\r\n"),
        (b"one\ntwo", "ONE\ntwo\nthree\n", "dO", "one\ntwo"),
        (b"one\ntwo\n", "ONE\nTWO\n", "dPdO", "one\ntwo\n"),
    ],
    ids=["drop first", "keep then drop", "jump", "new file", "deleted to empty", "crlf", "no eol", "all"],
)
def test_hunk_keys_decide_exactly_what_accept_sends(
    nvim: Neovim, disk: bytes | None, proposal: str, keys: str, expected: str
) -> None:
    target = nvim.workspace / "c.txt"
    if disk is not None:
        target.write_bytes(disk)
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, proposal)
        focus_proposal(nvim, target)
        nvim.api.input(keys + ":w<CR>")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": expected}
    assert (target.read_bytes() if disk is not None else None) == disk  # Gemini CLI writes, never we


def test_hunk_keys_are_configurable_and_go_with_the_review(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({ review = { keymaps = "
        "{ drop_hunk = 'gx', keep_hunk = false } } })"
    )
    target = nvim.workspace / "c.txt"
    target.write_text("one\ntwo\n")
    maps = "return vim.tbl_map(function(m) return m.lhs end, vim.api.nvim_buf_get_keymap(..., 'n'))"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "ONE\ntwo\n")
        buf = focus_proposal(nvim, target)
        # (and the comment key, <LocalLeader>c: backslash c)
        assert sorted(nvim.lua(maps, buf)) == sorted(["ZZ", "gx", "dP", "dO", "]c", "[c", "\\c"])
        nvim.api.input("gx:w<CR>")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "one\ntwo\n"}
        wait_for(lambda: nvim.lua(PENDING) == [], what="review closed")
        assert not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf)  # its keys went with it


EVENTS = """
vim.g.review_events = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'GeminiReview*',
  callback = function(ev)
    local d = ev.data
    local seen = vim.g.review_events
    local detail = d.hunk and d.hunk.new_start or d.content or vim.NIL
    table.insert(seen, { ev.match, vim.fn.fnamemodify(d.path, ':t'), d.client, detail })
    vim.g.review_events = seen
  end,
})
"""


def test_each_decision_fires_a_user_event_naming_the_client(nvim: Neovim) -> None:
    target = nvim.workspace / "c.txt"
    target.write_text("one\ntwo\nthree\n")
    nvim.lua(EVENTS)
    with mcp_session(nvim) as agent:
        call(agent, "openDiff", filePath=str(target), newContent="ONE\ntwo\nTHREE\n")
        focus_proposal(nvim, target)
        nvim.api.input("dpdo:w<CR>")
        assert outcome(agent, str(target))["params"]["content"] == "ONE\ntwo\nthree\n"
        call(agent, "openDiff", filePath=str(target), newContent="x\n")
        focus_proposal(nvim, target)
        nvim.api.command("GeminiReject")
        wait_for(lambda: len(nvim.lua("return vim.g.review_events")) == 6, what="six events")
    client = "nvim-gemini-test-ts-client"
    assert nvim.lua("return vim.g.review_events") == [
        ["GeminiReviewOpened", "c.txt", client, None],
        ["GeminiReviewHunkKept", "c.txt", client, 1],
        ["GeminiReviewHunkDropped", "c.txt", client, 3],
        ["GeminiReviewAccepted", "c.txt", client, "ONE\ntwo\nthree\n"],
        ["GeminiReviewOpened", "c.txt", client, None],
        ["GeminiReviewRejected", "c.txt", client, None],
    ]


STATUSLINE = "return require('gemini_companion').statusline()"


def test_one_list_of_every_pending_review_to_jump_accept_or_reject(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\ntwo\n")
    (ws / "b.py").write_text("bee\n")
    with ide_client(nvim) as ide, mcp_session(nvim) as agent:
        cmd = open_diff(ide, ws / "a.py", "one\nTWO\nthree\n")
        a = proposed_buf(nvim, ws / "a.py")
        call(agent, "openDiff", filePath=str(ws / "b.py"), newContent="")
        proposed_buf(nvim, ws / "b.py")
        # The client count follows a connect within 50 ms (coalesced state pushes): wait for it.
        wait_for(lambda: nvim.lua(STATUSLINE) == "Gemini ● 2 · 2 reviews", what="status line")
        nvim.api.command("GeminiReviews")
        assert [re.sub(r"\d+s$", "<age>", line) for line in nvim.api.current.buffer[:]] == [
            "a.py  Gemini CLI                  +2 −1  <age>",
            "b.py  nvim-gemini-test-ts-client  +0 −1  <age>",
        ]
        nvim.api.input("jr")  # reject b.py from the list
        assert outcome(agent, str(ws / "b.py"))["method"] == "ide/diffRejected"
        wait_for(lambda: len(nvim.api.current.buffer[:]) == 1, what="the list without b.py")
        nvim.api.input("<CR>")  # go to a.py's review
        wait_for(lambda: nvim.api.current.buffer.number == a, what="in a.py's proposal")
        nvim.api.command("GeminiReviews")
        nvim.api.input("a")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "one\nTWO\nthree\n"}
        wait_for(lambda: nvim.lua(STATUSLINE) == "Gemini ● 2", what="nothing pending")
    assert (ws / "a.py").read_text() == "one\ntwo\n" and (ws / "b.py").read_text() == "bee\n"


WINDOWS = """
return vim.tbl_map(function(w)
  return { vim.wo[w].diff, vim.wo[w].scrollbind, vim.wo[w].foldmethod }
end, vim.api.nvim_tabpage_list_wins(0))
"""


@pytest.mark.parametrize("lines", [3, 20_001], ids=["small", "over FOLD_MAX_LINES"])
def test_a_review_is_a_diff_with_folds_unless_very_large(nvim: Neovim, lines: int) -> None:
    target = nvim.workspace / "big.txt"
    disk = "".join(f"line {i}\n" for i in range(lines))
    target.write_text(disk)
    proposal = disk.replace("line 1\n", "LINE 1\n", 1) + "added\n"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, proposal)
        focus_proposal(nvim, target)
        fold = "diff" if lines < 20_000 else "manual"
        assert nvim.lua(WINDOWS) == [[True, True, fold], [True, True, fold]]
        assert nvim.api.current.window.cursor[0] == 2  # on the first change
        nvim.api.input("do:w<CR>")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": disk + "added\n"}


SHOWN = """
for _, d in ipairs(require('gemini_companion.review').reviews()) do
  return require('gemini_companion.review.layouts.unified').shown(d)
end
"""


def test_the_unified_layout_shows_removed_lines_inline_with_the_same_keys(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({ review = { layout = 'unified' } })"
    )
    target = nvim.workspace / "c.txt"
    target.write_text("a\nb\nc\nd\n")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "A\nb\nd\ne\n")
        buf = focus_proposal(nvim, target)
        assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 1  # one editable buffer
        assert nvim.api.current.buffer[:] == ["A", "b", "d", "e"]
        assert nvim.api.current.window.cursor[0] == 1
        assert nvim.lua(SHOWN) == [
            [1, "removed above", "a"],
            [1, "added", 1],
            [2, "removed below", "c"],
            [4, "added", 4],
        ]
        nvim.api.input("do")  # a comes back; the drawing follows
        wait_for(lambda: nvim.lua(SHOWN) == [[2, "removed below", "c"], [4, "added", 4]], what="redrawn")
        nvim.api.input("do")  # the cursor moved on to the next change: c comes back too
        wait_for(lambda: nvim.lua(SHOWN) == [[5, "added", 5]], what="redrawn")
        nvim.api.input(":w<CR>")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "a\nb\nc\nd\ne\n"}
        wait_for(lambda: not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf), what="closed")

        cmd = open_diff(ide, target, "")  # deleted to empty, then rejected with :q
        focus_proposal(nvim, target)
        assert nvim.lua(SHOWN) == [[1, "removed above", line] for line in "abcd"]
        nvim.api.command("quit")
        assert diff_result(ide, cmd) == {"status": "rejected"}
    assert target.read_text() == "a\nb\nc\nd\n"
