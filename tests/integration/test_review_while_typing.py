"""A review that arrives while the user types in the agent's terminal waits for their pause (issue 27
item 6). Its Insert-mode case is tests/lua/review_while_typing_spec.lua; this one stays end-to-end:
the review is the host's request arriving while Neovim waits in Terminal mode for the user's next
key, and a `nvim -l` spec cannot wait there idle (Neovim exits), so it needs a real Neovim and host."""

from __future__ import annotations

from pathlib import Path

from tests.support.gemini_ide import ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for


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
