"""The plugin never changes an option of the user's (issue 25 item 1): the agent terminal, reviews and the
review list set their options local to the windows they made. `vim.wo[win].number = false` acts like
`:set` and also changed the global value, so after `:Gemini` every new window, reviews included, had no
line numbers and no sign column, and the ✓ that `dp` places was invisible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.agent_terminal import Agent, start
from tests.support.helpers import Neovim, wait_for
from tests.support.mcp_http import propose

USERS = {"number": True, "relativenumber": True, "signcolumn": "yes", "cursorline": False, "wrap": True}
GLOBALS = "return { " + ", ".join(f"{name} = vim.go.{name}" for name in USERS) + ", scb = vim.go.scrollbind }"


def globals_of(nvim: Neovim) -> dict[str, Any]:
    found: dict[str, Any] = nvim.lua(GLOBALS)
    return found


def window_options(nvim: Neovim, win: int) -> dict[str, Any]:
    found: dict[str, Any] = nvim.lua(
        "local w = ... return { number = vim.wo[w].number, signcolumn = vim.wo[w].signcolumn }", win
    )
    return found


def test_the_users_options_survive_the_terminal_a_review_and_the_list(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    nvim.api.command("set number relativenumber signcolumn=yes nocursorline wrap")
    expected = {**USERS, "scb": False}
    (nvim.workspace / "notes.txt").write_text("one\ntwo\n")
    nvim.api.command("edit notes.txt")
    nvim.api.command("Gemini")  # show
    agent.started()
    nvim.api.command("Gemini")  # hide
    nvim.api.command("Gemini")  # show again
    nvim.api.command("GeminiFocus")
    assert globals_of(nvim) == expected
    nvim.api.command("wincmd p")
    nvim.api.command("new")  # a window the user opens now has the user's options
    assert window_options(nvim, nvim.api.current.window.handle) == {"number": True, "signcolumn": "yes"}
    nvim.api.command("close")

    disc = nvim.wait_discovery()
    propose(disc.port, disc.token, str(nvim.workspace / "notes.txt"), "one\nTWO\n")
    wait_for(lambda: nvim.lua("return #require('gemini_companion.review').pending()") == 1, what="the review")
    review_windows = nvim.lua("return vim.api.nvim_tabpage_list_wins(0)")
    for win in review_windows:  # the review's windows have numbers and a sign column for the ✓
        assert window_options(nvim, win) == {"number": True, "signcolumn": "yes"}
    nvim.api.command("GeminiReviews")
    nvim.api.input("q")
    assert globals_of(nvim) == expected
    nvim.api.command("GeminiRejectAll")
    wait_for(lambda: nvim.lua("return #require('gemini_companion.review').pending()") == 0, what="rejected")
    assert globals_of(nvim) == expected
