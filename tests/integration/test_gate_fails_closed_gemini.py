"""The review gate fails closed (issue 38, R2): with the gate installed, an edit the real gemini
(0.61.0, --approval-mode auto_edit: edits run unasked) would apply unseen is reviewed as gemini
would write it, or denied with a reason the model reads. Offline: the model is the scripted
stand-in."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_gemini_api import FakeGeminiApi, function_responses
from tests.support.helpers import Neovim, post_hook, wait_for, watch_reviews_opening
from tests.support.real_gemini import (  # noqa: F401 (fixtures)
    FIRST_RUN,
    GEMINI,
    GeminiTerminal,
    as_in_a_users_terminal,
    gate_installed,
    gemini_home,
    model_api,
    pending_review,
    returning_user,
)

pytestmark = pytest.mark.real_agent


class AutoEditGemini(GeminiTerminal):
    """`:terminal gemini --approval-mode auto_edit`: edits run unasked, shell commands ask."""

    def __init__(self, nvim: Neovim) -> None:
        super().__init__(nvim, "--approval-mode auto_edit")


GAVE_UP = "gate: denied write_file without a review"  # the server's log, as it denies (agents/gemini/gate.py)


def test_gemini_in_auto_edit_has_every_edit_reviewed_as_it_writes_it_or_denied_with_why(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811 (the fixtures imported above)
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """One gemini in auto_edit, started from Neovim by a returning user (the first run is tested in
    test_gemini_gate and test_real_gemini), through every way the gate can fail to show an edit:
    - edits the gate cannot model: binary content denied with why; a relative path and gemini's
      whitespace-flexible match reviewed as gemini resolves and writes them;
    - F2: Neovim stopped (a stand-in for a long blocking command) when the edit comes: denied, with
      why, and no review opens late;
    - F3: a file under another gemini session's review: denied ("try again after"), that review stays;
    - F1 and R4: :GeminiStop while gemini waits on a review denies the edit under review with the
      reason; its next edit, with the server stopped, is denied too."""
    nvim = gate_installed(make_nvim, gemini_home, model_api)
    watch_reviews_opening(nvim)
    ws = nvim.workspace
    (ws / "ind.py").write_text("def f():\n    return 1\n")
    target = ws / "hello.py"
    target.write_text("print('hello')\n")
    gemini = AutoEditGemini(nvim)
    try:
        gemini.answer_first_run(FIRST_RUN)  # (a returning user: at most the IDE nudge)

        # Binary content: denied with why, nothing written.
        model_api.call("write_file", file_path=str(ws / "run.sh"), content="echo PWNED\n# \u0000\n")
        model_api.say("Binary done.")
        gemini.submit("write run.sh")
        gemini.wait("Binary done.")
        assert not (ws / "run.sh").exists()
        assert "NUL bytes" in json.dumps(function_responses(model_api.turns[-1])[-1])

        # A relative path, as gemini resolves it: reviewed.
        model_api.call("write_file", file_path="rel.txt", content="relative\n")
        model_api.say("Relative done.")
        gemini.submit("write rel.txt")
        pending_review(gemini, ws / "rel.txt")
        assert not (ws / "rel.txt").exists()
        nvim.api.input(":w<CR>")
        gemini.wait("Relative done.")
        assert (ws / "rel.txt").read_text() == "relative\n"

        # gemini's whitespace-flexible match: the review shows gemini's result, and it lands.
        model_api.call(
            "replace",
            file_path=str(ws / "ind.py"),
            instruction="return 2",
            old_string="def f():\n  return 1",
            new_string="def f():\n  return 2",
        )
        model_api.say("Indent done.")
        gemini.submit("return 2")
        proposed = pending_review(gemini, ws / "ind.py")
        assert (ws / "ind.py").read_text() == "def f():\n    return 1\n"
        shown = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", proposed)
        assert shown == ["def f():", "  return 2"]
        nvim.api.input(":w<CR>")
        gemini.wait("Indent done.")
        assert (ws / "ind.py").read_text() == "def f():\n  return 2\n"

        # F2: Neovim frozen until the server has given up on it (its log says so) and answered the hook.
        pid = nvim.lua("return vim.fn.getpid()")
        model_api.call("write_file", file_path=str(target), content="print('busy')\n")
        model_api.say("Busy done.")
        turns, gave_up = len(model_api.turns), nvim.log_text().count(GAVE_UP)
        gemini.submit("say busy")
        gemini.wait_until(lambda: len(model_api.turns) > turns, "gemini asked the model")
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for(
                lambda: nvim.log_text().count(GAVE_UP) > gave_up, 120, what="the server gave up on Neovim"
            )
        finally:
            os.kill(pid, signal.SIGCONT)
        gemini.wait("Busy done.")
        assert target.read_text() == "print('hello')\n"
        said = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert "not responding" in said or "did not answer" in said

        # F3: another session's review of the file. The open that waited for Neovim ran before this
        # one (the server's calls reach Neovim in order): had it shown a review, this one's would not.
        found = nvim.wait_discovery()
        other = {
            "session_id": "another-gemini",
            "hook_event_name": "BeforeTool",
            "tool_name": "write_file",
            "tool_input": {"file_path": str(target), "content": "the other gemini's\n"},
        }
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            other_waits = pool.submit(post_hook, found.port, found.token, "gemini", other)
            proposed = pending_review(gemini, target)
            assert nvim.lua("return #require('gemini_companion.review').pending()") == 1
            assert nvim.api.buffers[proposed][:] == ["the other gemini's"]  # not the busy edit, late
            model_api.call("write_file", file_path=str(target), content="print('mine')\n")
            model_api.say("Mine done.")
            gemini.submit("say mine")
            gemini.wait("Mine done.")
            assert target.read_text() == "print('hello')\n"
            said = json.dumps(function_responses(model_api.turns[-1])[-1])
            assert "under review for another session: try again after" in said
            assert nvim.lua("return #require('gemini_companion.review').pending()") == 1
            nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", proposed)
            assert json.loads(other_waits.result(timeout=30))["decision"] == "deny"

        # F1: the server stops while gemini waits on a review.
        model_api.call("write_file", file_path=str(target), content="print('bye')\n")
        model_api.say("First done.")
        gemini.submit("say bye")
        pending_review(gemini, target)
        nvim.api.command("GeminiStop")
        gemini.wait("First done.")
        assert target.read_text() == "print('hello')\n"
        assert "Neovim's review server" in json.dumps(function_responses(model_api.turns[-1])[-1])

        # R4: the next edit, the server stopped.
        model_api.call("write_file", file_path=str(target), content="print('again')\n")
        model_api.say("Second done.")
        gemini.submit("say again")
        gemini.wait("Second done.")
        assert target.read_text() == "print('hello')\n"
        assert "Neovim's review server is stopped" in json.dumps(function_responses(model_api.turns[-1])[-1])
    finally:
        nvim.quit()
        gemini.kill()
