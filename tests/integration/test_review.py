"""Reviews as a shared machine requires, end to end: one IdeClient review accepted by `:w`, and what
Python enforces (the caps on pending proposals, a review belongs to its session, a session's end
releases its reviews, aliased paths are one review). The review's UI (habits, new folders, only an
explicit write accepts, orphans) is in tests/lua/review_spec.lua, with the host stubbed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.gemini_ide import PENDING, diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.node_driver import NodeDriver
from tests.support.reviewing import ORPHANED, call, edit_proposal, mcp_session, messages_since, outcome


@pytest.fixture
def project(nvim: Neovim) -> Path:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\ntwo\n")
    (ws / "b.py").write_text("bee\n")
    return ws


def error_text(result: dict[str, Any]) -> str:
    assert result.get("isError") is True, result
    return str(result["content"][0]["text"])


def rejections(ts: NodeDriver, path: str) -> int:
    """How many ide/diffRejected notifications for `path` the client has received so far."""
    return sum(
        1
        for e in list(ts.events)
        if e.get("event") == "notification"
        and e.get("method") == "ide/diffRejected"
        and e["params"]["filePath"] == path
    )


# -- one review end to end: Gemini CLI's IdeClient, openDiff, :w, ide/diffAccepted ---------------------
# (the review's UI, every habit and guard, is in tests/lua/review_spec.lua, with the host stubbed)


def test_an_ide_client_review_is_accepted_by_w(nvim: Neovim, project: Path) -> None:
    target = project / "a.py"
    with ide_client(nvim) as ide:
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        edit_proposal(nvim, buf, "zero")
        seen = len(nvim.notifications())
        nvim.api.input(":w<CR>")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "zero\none\nTWO\n"}
        wait_for(lambda: nvim.lua(PENDING) == [], what="view closed")
        assert messages_since(nvim, seen) == ["gemini-companion: accepted the edit to a.py"]
    assert target.read_text() == "one\ntwo\n"


# -- issue 15.7: caps ---------------------------------------------------------------------------

MiB = 1 << 20
# `make stress` (STRESS=1) floods with the full count (bench/reliability.md).
FLOOD = 1000 if os.environ.get("STRESS") == "1" else 40


def test_a_flood_of_proposals_opens_no_more_than_the_default_cap(nvim: Neovim) -> None:
    """A buggy or hostile agent proposing without end: the user gets at most review.max_pending_per_session
    (8) tabs, every further call is refused in words, and Neovim stays responsive."""
    ws = nvim.workspace
    tabs_before = nvim.lua("return #vim.api.nvim_list_tabpages()")
    with mcp_session(nvim) as agent:
        refused = 0
        for i in range(FLOOD):
            result = call(agent, "openDiff", filePath=str(ws / f"flood{i}.py"), newContent=f"{i}\n")
            if result.get("isError"):
                assert "review.max_pending_per_session" in error_text(result)
                refused += 1
        assert refused == FLOOD - 8
        assert len(nvim.lua(PENDING)) == 8
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs_before + 8
        assert nvim.api.eval("1 + 1") == 2
    assert not list(ws.glob("flood*.py"))  # nothing was written


def test_pending_proposals_are_capped_per_session_and_in_total(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua=f"""
        require('gemini_companion').setup({{ review = {{
          new_tab = false, focus = false,
          max_pending_per_session = 2, max_pending = 3,
          max_pending_bytes_per_session = {MiB}, max_pending_bytes = {3 * MiB // 2},
        }} }})
        """
    )
    ws = nvim.workspace
    with mcp_session(nvim) as a, mcp_session(nvim) as b, mcp_session(nvim) as c:
        assert call(a, "openDiff", filePath=str(ws / "a1"), newContent="1\n") == {"content": []}
        call(a, "openDiff", filePath=str(ws / "a2"), newContent="2\n")
        text = error_text(call(a, "openDiff", filePath=str(ws / "a3"), newContent="3\n"))
        assert "too many proposals wait for review (2 for this session" in text
        assert "review.max_pending_per_session" in text
        call(b, "openDiff", filePath=str(ws / "b1"), newContent="1\n")
        text = error_text(call(c, "openDiff", filePath=str(ws / "c1"), newContent="1\n"))
        assert "(3 for all sessions together, setting review.max_pending)" in text
        # A session's replacement of its own review does not count twice.
        call(a, "openDiff", filePath=str(ws / "a1"), newContent="1 again\n")
        assert sorted(nvim.lua(PENDING)) == [str(ws / n) for n in ("a1", "a2", "b1")]

        nvim.api.command("GeminiRejectAll")
        # The server counts a review until the rejection reaches it: wait for the clients to be told
        # (a1 twice: replaced, then rejected).
        wait_for(
            lambda: (
                rejections(a, str(ws / "a1")) == 2
                and rejections(a, str(ws / "a2")) == 1
                and rejections(b, str(ws / "b1")) == 1
            ),
            what="the rejections reach their clients",
        )
        big = "x" * (600 * 1024)
        call(a, "openDiff", filePath=str(ws / "big1"), newContent=big)
        text = error_text(call(a, "openDiff", filePath=str(ws / "big2"), newContent=big))
        assert f"over the {MiB} allowed for this session (setting review.max_pending_bytes_per_session)" in (
            text
        )
        call(b, "openDiff", filePath=str(ws / "big3"), newContent=big)
        text = error_text(call(c, "openDiff", filePath=str(ws / "big4"), newContent=big))
        assert "allowed for all sessions together (setting review.max_pending_bytes)" in text
        assert sorted(nvim.lua(PENDING)) == [str(ws / "big1"), str(ws / "big3")]


# -- issue 15.8: a review belongs to its session ----------------------------------------------------


def test_only_the_owning_session_closes_or_replaces_its_review(nvim: Neovim, project: Path) -> None:
    target = project / "a.py"
    with ide_client(nvim) as ide, mcp_session(nvim) as other:
        cmd = open_diff(ide, target, "one\nTWO\n")
        buf = proposed_buf(nvim, target)
        edit_proposal(nvim, buf, "mine")
        text = error_text(call(other, "closeDiff", filePath=str(target)))
        assert "belongs to another session" in text
        text = error_text(call(other, "openDiff", filePath=str(target), newContent="theirs\n"))
        assert "is under review for another session: try again after" in text
        assert nvim.lua(PENDING) == [str(target)]
        assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]  # the user's edit is intact
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf)
        nvim.api.command("write")
        assert diff_result(ide, cmd) == {"status": "accepted", "content": "mine\none\nTWO\n"}
        assert not [e for e in other.events if e.get("event") == "notification" and "diff" in e["method"]]


# -- issue 15.9: the user's edits outlive the session (what Lua does then: tests/lua/review_spec.lua) --


def test_a_session_that_ends_releases_its_reviews_and_an_edited_one_stays(
    nvim: Neovim, project: Path
) -> None:
    a, b = project / "a.py", project / "b.py"
    with mcp_session(nvim) as ts:
        call(ts, "openDiff", filePath=str(a), newContent="one\nTWO\n")
        call(ts, "openDiff", filePath=str(b), newContent="BEE\n")
        buf = proposed_buf(nvim, a)
        proposed_buf(nvim, b)
        edit_proposal(nvim, buf, "mine")
        assert ts.send("close", terminate=True)["ok"]  # HTTP DELETE: the session ends
    wait_for(lambda: nvim.lua(PENDING) == [], what="reviews released")
    assert nvim.lua(ORPHANED) == [str(a)]
    assert nvim.api.buffers[buf][:] == ["mine", "one", "TWO"]


# -- issue 15.10: aliased paths ----------------------------------------------------------------


def test_aliased_paths_are_one_review_and_each_answer_echoes_the_clients_string(
    nvim: Neovim, project: Path
) -> None:
    dotted, doubled = f"{project}/./a.py", f"{project}//a.py"
    with mcp_session(nvim) as ts:
        call(ts, "openDiff", filePath=dotted, newContent="first\n")
        proposed_buf(nvim, project / "a.py")
        call(ts, "openDiff", filePath=doubled, newContent="second\n")  # the same file: replaces
        assert outcome(ts, dotted)["method"] == "ide/diffRejected"
        buf = wait_for(
            lambda: (
                (b := proposed_buf(nvim, project / "a.py")) and nvim.api.buffers[b][:] == ["second"] and b
            ),
            what="second proposal shown",
        )
        assert nvim.lua(PENDING) == [str(project / "a.py")]
        assert nvim.api.buffers[buf].name == f"{project / 'a.py'} (proposed)"
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
        nvim.api.command("write")  # E32 (no file name) before
        accepted = outcome(ts, doubled)
        assert accepted["method"] == "ide/diffAccepted" and accepted["params"]["content"] == "second\n"
        nvim.api.command("GeminiReviews")
        assert messages_since(nvim, 0)[-1] == "gemini-companion: no pending reviews"
