"""Review comments (issue 28, first slice): a comment on a line or lines of a proposal, shown
beside them, listed by :GeminiComments, and sent to the agent as one prompt with `path:line`
anchors and the lines they are about, delivered as :GeminiSend delivers (one bracketed paste
through the one sanitizer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_gemini_ide import ide_client, open_diff, proposed_buf

from tests.integration.test_send import END, START, received, running_agent

SHOWN = (
    "return vim.tbl_map(function(m) return m[4].virt_text[1][1] end,"
    " vim.api.nvim_buf_get_extmarks(..., require('gemini_companion.comments').ns, 0, -1, {details = true}))"
)


def test_comments_on_two_hunks_reach_the_agent_as_one_prompt(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    with ide_client(nvim) as ide:
        open_diff(ide, target, "a = 10\nb = 2\nc = 3\nd = 40\n")
        proposed = proposed_buf(nvim, target)
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
        # As typed: the comment key (<LocalLeader>c; LocalLeader unset: backslash), the text, Enter.
        nvim.api.input("1G\\cwhy ten?<CR>")
        nvim.api.input("4GV\\ckeep four<CR>")
        assert nvim.lua(SHOWN, proposed) == ["  » why ten?", "  » keep four"]
        nvim.api.command("GeminiComments")
        items = nvim.api.call("getqflist")
        assert [(i["lnum"], i["text"]) for i in items] == [(1, "why ten?"), (4, "keep four")]
        nvim.api.command("GeminiCommentsSend")
        prompt = (
            "Review comments on your changes:\n"
            "\ncalc.py:1\n> a = 10\nwhy ten?\n"
            "\ncalc.py:4\n> d = 40\nkeep four\n"
        )
        received(agent, START + prompt.encode() + END)
        assert nvim.lua(SHOWN, proposed) == ["  ✓ why ten?", "  ✓ keep four"]  # marked sent
        nvim.api.command("GeminiComments")
        assert any("no open review comment" in n[0] for n in nvim.notifications())


def test_rejecting_a_review_with_comments_sends_them_as_the_next_prompt(
    make_nvim: Any, tmp_path: Path
) -> None:
    """Gemini's diffRejected carries no reason: the comments reach the agent's prompt instead."""
    nvim, agent = running_agent(make_nvim, tmp_path)
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\n")
    with ide_client(nvim) as ide:
        open_diff(ide, target, "a = 2\n")
        proposed = proposed_buf(nvim, target)
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
        nvim.api.input("\\cnot two<CR>")
        nvim.api.input(":q<CR>")  # rejects the proposal
        received(agent, START + b"Review comments on your changes:\n\ncalc.py:1\n> a = 2\nnot two\n" + END)
        assert any("1 comment sent with the rejection" in n[0] for n in nvim.notifications())
        assert target.read_text() == "a = 1\n"
