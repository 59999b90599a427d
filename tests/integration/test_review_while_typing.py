"""A review that arrives while the user types leaves their Insert whole (issue 25 item 6)."""

from __future__ import annotations

from pathlib import Path

from test_gemini_ide import ide_client, open_diff, proposed_buf

from tests.support.helpers import Neovim, wait_for


def test_a_review_arriving_mid_insert_keeps_the_insert_one_undo_step(nvim: Neovim) -> None:
    mine = nvim.workspace / "mine.txt"
    mine.write_text("first\n")
    target: Path = nvim.workspace / "a.py"
    target.write_text("x = 1\n")
    nvim.api.command("edit mine.txt")
    with ide_client(nvim) as ide:
        nvim.api.input("Go with one")
        wait_for(lambda: nvim.lua("return vim.api.nvim_get_mode()")["mode"] == "i", what="Insert mode")
        open_diff(ide, target, "x = 2\n")  # the review arrives while the user types
        proposed_buf(nvim, target)
        nvim.api.input(" with two<Esc>u")
        wait_for(lambda: nvim.lua("return vim.api.nvim_get_mode()")["mode"] == "n", what="Normal mode")
        assert nvim.api.current.buffer.name == str(mine)
        assert nvim.api.current.buffer[:] == ["first"]  # the whole inserted line undone at once
