""":GeminiChanges as a Vim user drives it (issue 25): the quickfix list it fills, one-key answers."""

from __future__ import annotations

import pytest

from tests.support.gemini_ide import ide_client
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import snapshot_taken


@pytest.mark.parametrize(("key", "deleted"), [("y", True), ("n", False), ("<Esc>", False)])
def test_deleting_a_new_file_takes_one_key_and_swallows_no_command(
    nvim: Neovim, key: str, deleted: bool
) -> None:
    ws = nvim.workspace
    (ws / "old.txt").write_text("one\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "new.txt").write_text("a\nb\n")  # the agent
        nvim.api.command("GeminiChanges new.txt")
        wait_for(lambda: nvim.api.current.buffer[:] == ["a", "b"], what="the new file shown")
        nvim.api.input("dO" + key)  # one key answers
        nvim.api.input(":let g:next = 1\r")  # the user's next command runs, not taken as the answer
        wait_for(lambda: nvim.api.eval("get(g:, 'next', 0)") == 1, what="the next command run")
        assert (ws / "new.txt").exists() is not deleted


SIDES = """
local tab = vim.api.nvim_get_current_tabpage()
return vim.tbl_map(function(win)
  local buf = vim.api.nvim_win_get_buf(win)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':t')
  return { name, vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.wo[win].diff }
end, vim.api.nvim_tabpage_list_wins(tab))
"""


def test_the_quickfix_list_is_counted_and_walking_it_shows_each_pair_in_the_same_view(nvim: Neovim) -> None:
    ws = nvim.workspace
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name} before\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 3)
        for name in ("a.txt", "b.txt", "c.txt"):
            (ws / name).write_text(f"{name} after\n")  # the agent
        tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
        before = len(nvim.notifications())
        nvim.api.command("GeminiChanges")
        said = "gemini-companion: 3 files changed without a review: :copen lists them, :cnext shows the next"
        wait_for(lambda: said in [n[0] for n in nvim.notifications()[before:]], what="the count said")
        assert nvim.lua(SIDES) == [
            ["a.txt (before the change)", ["a.txt before"], True],
            ["a.txt", ["a.txt after"], True],
        ]
        nvim.api.command("cnext")
        assert nvim.lua(SIDES) == [
            ["b.txt (before the change)", ["b.txt before"], True],
            ["b.txt", ["b.txt after"], True],
        ]
        nvim.api.command("copen")
        nvim.api.input("3G<CR>")  # <CR> in the quickfix window
        wait_for(lambda: nvim.api.current.buffer.name == str(ws / "c.txt"), what="c.txt shown")
        nvim.api.command("cclose")
        assert nvim.lua(SIDES) == [
            ["c.txt (before the change)", ["c.txt before"], True],
            ["c.txt", ["c.txt after"], True],
        ]
        nvim.api.command("cfirst")
        assert nvim.lua(SIDES)[0] == ["a.txt (before the change)", ["a.txt before"], True]
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs + 1
        names = nvim.lua("return vim.tbl_map(vim.api.nvim_buf_get_name, vim.api.nvim_list_bufs())")
        assert not [n for n in names if n.endswith("]")]  # no "(before the change) [2]"
        nvim.api.input("dO")
        wait_for(lambda: (ws / "a.txt").read_text() == "a.txt before\n", what="a.txt reverted")
