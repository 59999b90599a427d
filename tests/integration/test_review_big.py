"""Big reviews (issue 29): a 200 000-line proposal opens at once and fills in slices, so Neovim
answers other clients meanwhile; it cannot be accepted until it is shown whole; then it shows the
right hunks and `:w` sends exactly its text. (How long anything blocks is a bench figure,
bench/growth_reviews.py, never asserted here.)"""

from __future__ import annotations

import pynvim

from tests.support.gemini_ide import diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for

LINES = 200_000
STATE = (
    "local r = require('gemini_companion.review').reviews()[1]"
    " if not r then return nil end"
    " return { filling = r.filling or false, lines = vim.api.nvim_buf_line_count(r.proposed) }"
)
HUNKS = (
    "local r = require('gemini_companion.review').reviews()[1]"
    " local hs, out = require('gemini_companion.review.keys').current(r), {}"
    " for i = 1, require('gemini_companion.text.hunks').count(hs) do out[i] = hs[i] end return out"
)

# The rows the proposal marks (review/layouts/unified.lua's own record of what it drew).
SHOWN = (
    "local r = require('gemini_companion.review').reviews()[1]"
    " local s = require('gemini_companion.review.layouts.unified').shown(r) return #s > 0 and s or nil"
)
# How many hunks the review has for its text as it is now (nil until they are found again).
FRESH = (
    "local r = require('gemini_companion.review').reviews()[1]"
    " return r.hunks_tick == vim.api.nvim_buf_get_changedtick(r.proposed)"
    " and require('gemini_companion.text.hunks').count(r.hunks) or nil"
)


def big_texts(lines: int = LINES) -> tuple[str, str]:
    disk = "".join(f"value_{i} = {i}\n" for i in range(lines))
    proposal = "".join(f"value_{i} = {i * (2 if i % 97 == 0 else 1)}\n" for i in range(lines))
    return disk, proposal


def test_a_200k_line_review_fills_in_slices_shows_its_hunks_and_accepts_exactly(nvim: Neovim) -> None:
    target = nvim.workspace / "big.py"
    disk, proposal = big_texts()
    target.write_text(disk)
    other = pynvim.attach("socket", path=str(nvim.sock))  # a second client, as another plugin or UI
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, proposal)
        buf = proposed_buf(nvim, target)
        seen = []
        while True:
            state = other.exec_lua(STATE)
            seen.append(state)
            if not state["filling"]:
                break
        # The second client was answered while the review was still filling, and saw it grow.
        filling = [s["lines"] for s in seen if s["filling"]]
        assert filling, "the review filled in one go"
        assert min(filling) < LINES
        assert seen[-1]["lines"] == LINES
        assert nvim.api.buffers[buf][:3] == ["value_0 = 0", "value_1 = 1", "value_2 = 2"]
        assert nvim.api.buffers[buf][97] == "value_97 = 194"
        hunks = nvim.lua(HUNKS)
        assert len(hunks) == (LINES - 1) // 97
        last = (LINES - 1) // 97 * 97 + 1
        assert hunks[0] == [98, 1, 98, 1] and hunks[-1] == [last, 1, last, 1]
        assert nvim.api.current.buffer.number == buf
        assert tuple(nvim.api.current.window.cursor) == (98, 0)  # on the first change
        assert nvim.lua("return vim.bo[...].modifiable", buf) is True
        assert nvim.lua("return vim.bo[...].filetype", buf) == "python"
        # Past diff mode's size: the proposal shows its hunks itself, found off the main loop.
        assert nvim.lua("return vim.wo.diff") is False
        drawn = wait_for(lambda: nvim.lua(SHOWN), what="hunks drawn")
        assert drawn[:2] == [[98, "removed above", "value_97 = 97"], [98, "added", 98]]
        # Marked near what the window shows (unified.AROUND_VIEW lines around it), not all 2 061
        # hunks; at the end of the file once the view is there.
        around = nvim.lua("return require('gemini_companion.review.layouts.unified').AROUND_VIEW")
        bottom = nvim.lua("return vim.fn.line('w$')")
        assert max(row for row, *_ in drawn) <= bottom + around
        assert len(drawn) == 2 * len([r for r in range(98, bottom + around + 1, 97)])
        nvim.api.input("G")
        near_end = wait_for(
            lambda: (s := nvim.lua(SHOWN)) and min(row for row, *_ in s) > LINES - 2 * around and s,
            what="the marks near the end",
        )
        removed_line = f"value_{last - 1} = {last - 1}"
        assert near_end[-2:] == [[last, "removed above", removed_line], [last, "added", last]]
        nvim.api.input("gg")
        wait_for(
            lambda: (s := nvim.lua(SHOWN)) and s[:2] == drawn[:2] and max(row for row, *_ in s) < 2 * around,
            what="the marks near the top again",
        )
        nvim.api.command("split")  # a second window at the end: marked around both, each once
        nvim.api.input("G")
        both = wait_for(
            lambda: (s := nvim.lua(SHOWN)) and s[0][0] < around and s[-1][0] == last and s,
            what="the marks near both windows",
        )
        assert len({tuple(m) for m in both}) == len(both)
        nvim.api.command("close")
        # An edit is compared again: putting the file's line back leaves one hunk fewer.
        nvim.api.buffers[buf][97] = "value_97 = 97"
        wait_for(lambda: nvim.lua(FRESH) == len(hunks) - 1, what="compared again")
        assert nvim.lua(SHOWN)[:2] == [[195, "removed above", "value_194 = 194"], [195, "added", 195]]
        # The keys act on those hunks: ]c twice is on the third change, `do` puts the file's line back.
        nvim.api.current.window.cursor = (1, 0)
        nvim.api.input("]c]c")
        wait_for(lambda: tuple(nvim.api.current.window.cursor) == (292, 0), what="on the next change but one")
        nvim.api.input("do")
        wait_for(lambda: nvim.api.buffers[buf][291] == "value_291 = 291", what="the file's line back")
        wait_for(lambda: nvim.lua(FRESH) == len(hunks) - 2, what="compared again after do")
        nvim.api.buffers[buf][291] = "value_291 = 582"
        nvim.api.buffers[buf][97] = "value_97 = 194"
        nvim.lua("_G.big_review = require('gemini_companion.review').reviews()[1]")
        nvim.api.command("write")
        result = diff_result(ide, cmd, timeout=60)
        assert result["status"] == "accepted"
        assert result["content"] == proposal
        assert target.read_text() == disk  # the plugin never writes the file
        # Closed: the record keeps neither text (each is 4 MB here).
        wait_for(lambda: nvim.lua("return _G.big_review.disk_text == nil and _G.big_review.old_text == nil"))
    other.close()


def test_a_review_still_filling_cannot_be_accepted_and_closing_it_rejects(nvim: Neovim) -> None:
    target = nvim.workspace / "big.py"
    disk, proposal = big_texts()
    target.write_text(disk)
    # Slices of one line: it stays filling long enough to try.
    nvim.lua("require('gemini_companion.review.fill').CHUNK_LINES = 1")
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, proposal)
        buf = proposed_buf(nvim, target)
        assert nvim.lua(STATE)["filling"] is True
        assert nvim.lua("return vim.bo[...].modifiable", buf) is False  # nobody edits half of it
        nvim.api.command("silent! write")
        assert any("still loading" in str(n[0]) for n in nvim.notifications())
        assert nvim.lua(STATE)["filling"] is True  # still open, not accepted
        nvim.api.command("GeminiReject")
        assert diff_result(ide, cmd) == {"status": "rejected"}
        wait_for(lambda: nvim.lua(STATE) is None, what="view closed")
        assert not nvim.lua("return vim.api.nvim_buf_is_valid(...)", buf)


def test_a_big_review_of_a_crlf_file_keeps_its_line_ends(nvim: Neovim) -> None:
    """The file of a big review is read off the main loop, after its buffers were made: they take
    its CRLF line ends once it is read, and the accepted text has them, as a small review's has."""
    target = nvim.workspace / "big.py"
    disk, proposal = big_texts(40_000)  # ~1.3 MB together: a big review, in diff mode
    target.write_bytes(disk.replace("\n", "\r\n").encode())
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, proposal)  # LF: the review keeps the file's line ends
        buf = proposed_buf(nvim, target)
        wait_for(lambda: not nvim.lua(STATE)["filling"], what="filled")
        original = nvim.lua("return require('gemini_companion.review').reviews()[1].original")
        assert nvim.lua(
            "return { vim.bo[...].fileformat, vim.bo[select(2, ...)].fileformat }", buf, original
        ) == [
            "dos",
            "dos",
        ]
        assert nvim.api.buffers[original][97] == "value_97 = 97"  # no CR left in the lines
        assert nvim.lua("return vim.wo.diff") is True
        nvim.api.command("write")
        result = diff_result(ide, cmd, timeout=60)
        assert result["status"] == "accepted"
        assert result["content"] == proposal.replace("\n", "\r\n")
