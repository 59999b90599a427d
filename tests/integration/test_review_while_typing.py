"""A review that arrives while the user types leaves their Insert whole (issue 25 item 6)."""

from __future__ import annotations

from pathlib import Path

from tests.support.gemini_ide import ide_client, open_diff, proposed_buf
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


def test_a_review_arriving_while_the_user_types_in_a_terminal_waits_for_their_pause(nvim: Neovim) -> None:
    """Keys typed into the agent's terminal a moment before a review arrives stay the terminal's;
    the review takes focus once the user pauses (issue 27 item 6)."""
    target: Path = nvim.workspace / "a.py"
    target.write_text("x = 1\n")
    typed = nvim.workspace / "typed.txt"
    nvim.api.command(f"terminal cat > {typed}")
    term_win = nvim.api.current.window.handle
    nvim.api.command("startinsert")
    with ide_client(nvim) as ide:
        nvim.api.input("first ")
        wait_for(lambda: nvim.lua("return vim.api.nvim_get_mode()")["mode"] == "t", what="Terminal mode")
        open_diff(ide, target, "x = 2\n")  # arrives while the user types
        proposed = proposed_buf(nvim, target)
        nvim.api.input("second\r")  # still in flight: the terminal's, not the review's
        wait_for(
            lambda: typed.exists() and typed.read_text() == "first second\n",
            what="the keys reached the terminal",
        )
        assert nvim.api.current.window.handle == term_win
        assert nvim.api.buffers[proposed][:] == ["x = 2"]  # nothing typed into the proposal
        # The user pauses: now the review takes focus.
        wait_for(
            lambda: nvim.api.current.buffer.number == proposed, 5, what="focus on the review after the pause"
        )
