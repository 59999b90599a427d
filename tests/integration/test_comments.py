"""Review comments (issue 28): a comment on a line or lines of a proposal, of a :GeminiChanges
view, or of a review in :GeminiReviews, shown beside them, listed by :GeminiComments and
:GeminiReviews, and sent to the agent as one prompt with `path:line` anchors and the lines they are
about, delivered as :GeminiSend delivers (one bracketed paste through the one sanitizer). A
rejection with comments asks once whether they go with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.agent_terminal import END, START, received, running_agent
from tests.support.gemini_ide import ide_client, open_diff, proposed_buf
from tests.support.helpers import answer, wait_for

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
        nvim.api.input(":q<CR>")  # rejects the proposal, and asks about the comment
        answer(nvim, "y")
        received(agent, START + b"Review comments on your changes:\n\ncalc.py:1\n> a = 2\nnot two\n" + END)
        said = "gemini-companion: rejected the edit to calc.py (1 comment sent with it)"
        assert said in [n[0] for n in nvim.notifications()]
        assert target.read_text() == "a = 1\n"


def test_rejecting_without_sending_keeps_the_comments_for_later(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\n")
    with ide_client(nvim) as ide:
        open_diff(ide, target, "a = 2\n")
        proposed = proposed_buf(nvim, target)
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
        nvim.api.input("\\cnot two<CR>")
        nvim.api.input(":q<CR>")
        answer(nvim, "n")
        said = (
            "gemini-companion: rejected the edit to calc.py (1 comment kept: :GeminiCommentsSend sends them)"
        )
        wait_for(lambda: said in [n[0] for n in nvim.notifications()], what="kept")
        assert agent.typed() == b""
        nvim.api.command("GeminiComments")  # still listed, at the proposal's line
        assert [(i["lnum"], i["text"]) for i in nvim.api.call("getqflist")] == [(1, "not two")]
        nvim.api.command("edit calc.py")  # about the rejected text: never drawn in the file
        assert nvim.lua(SHOWN, nvim.api.current.buffer.number) == []
        nvim.api.command("GeminiCommentsSend")
        received(agent, START + b"Review comments on your changes:\n\ncalc.py:1\n> a = 2\nnot two\n" + END)


def test_a_comment_on_an_accepted_proposal_stays_on_the_file(make_nvim: Any, tmp_path: Path) -> None:
    nvim, _agent = running_agent(make_nvim, tmp_path)
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\n")
    with ide_client(nvim) as ide:
        open_diff(ide, target, "x = 0\na = 2\n")
        proposed = proposed_buf(nvim, target)
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
        nvim.api.input("2G\\cwhy two?<CR>")
        nvim.api.input(":w<CR>")  # accepts: the file now holds these lines
        wait_for(lambda: nvim.lua("return require('gemini_companion.review').count()") == 0, what="accepted")
        target.write_text("x = 0\na = 2\n")  # as the agent writes it
        nvim.api.command("edit calc.py")
        assert nvim.lua(SHOWN, nvim.api.current.buffer.number) == ["  » why two?"]
        nvim.api.input("ggOnew first line<Esc>")  # the comment moves with the line it is on
        nvim.api.command("GeminiComments")
        assert [(i["lnum"], i["text"]) for i in nvim.api.call("getqflist")] == [(3, "why two?")]


def changed_in_view(nvim: Any, name: str, before: str, after: str) -> None:
    """`name` changes on disk without a review, and :GeminiChanges shows it."""
    target = nvim.workspace / name
    target.write_text(before)
    nvim.api.command(f"edit {name}")
    nvim.api.command("tabnew")
    target.write_text(after)  # the agent's shell command
    said = f"gemini-companion: {name} changed on disk without a review (:GeminiChanges shows it)"
    wait_for(lambda: said in [n[0] for n in nvim.notifications()], what="the change noticed")
    nvim.api.command(f"GeminiChanges {name}")
    assert nvim.api.current.buffer.name == str(target)


def test_a_comment_in_a_changes_view_reaches_the_agent_and_outlives_the_view(
    make_nvim: Any, tmp_path: Path
) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.wait_state("running")
    changed_in_view(nvim, "w.txt", "one\ntwo\nthree\n", "ONE\ntwo\nTHREE\n")
    nvim.api.input("3G\\cshout less<CR>")
    buf = nvim.api.current.buffer.number
    assert nvim.lua(SHOWN, buf) == ["  » shout less"]
    nvim.api.command("wincmd h | tabclose")  # the view closes; the file's buffer goes too
    nvim.api.command(f"bwipeout {buf}")
    nvim.api.command("GeminiChanges w.txt")  # and the view opens again
    assert nvim.lua(SHOWN, nvim.api.current.buffer.number) == ["  » shout less"]
    nvim.api.input("3G\\c<C-u>shout much less<CR>")  # the key on a commented line edits it
    nvim.api.command("GeminiCommentsSend")
    received(agent, START + b"Review comments on your changes:\n\nw.txt:3\n> THREE\nshout much less\n" + END)
    nvim.api.command("GeminiCommentsSend!")  # clears the sent ones
    assert nvim.lua(SHOWN, nvim.api.current.buffer.number) == []


def test_the_review_list_shows_takes_and_sends_comments(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    target = nvim.workspace / "calc.py"
    target.write_text("a = 1\nb = 2\n")
    with ide_client(nvim) as ide:
        open_diff(ide, target, "a = 1\nb = 3\n")
        proposed_buf(nvim, target)
        nvim.api.command("GeminiReviews")
        nvim.api.input("c")  # on the review: a comment on its first change
        nvim.api.input("three?<CR>")
        listed = ["calc.py", "1 comment", "Open comments (1):", "  calc.py:2  » three?"]
        wait_for(lambda: all(part in "\n".join(nvim.api.current.buffer[:]) for part in listed), what="listed")
        assert nvim.api.current.buffer[0].endswith("1 comment")
        nvim.api.input("3G<CR>")  # the comment's line: to the comment
        # (typed keys are taken after this RPC's answer: the jump is waited for, as a user sees it)
        wait_for(lambda: nvim.api.current.window.cursor[0] == 2, what="the jump to the comment")
        assert nvim.api.current.buffer.number == proposed_buf(nvim, target)
        nvim.api.command("GeminiReviews")
        nvim.api.input("s")
        received(agent, START + b"Review comments on your changes:\n\ncalc.py:2\n> b = 3\nthree?\n" + END)
