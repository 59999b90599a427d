"""The review gate fails closed (issue 38, R2): with the gate installed, an edit the real gemini
(0.61.0, --approval-mode auto_edit: edits run unasked) would apply unseen is reviewed as gemini
would write it, or denied with a reason the model reads. Offline: the model is the scripted
stand-in."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_gemini_api import FakeGeminiApi, function_responses
from tests.support.helpers import Neovim, post_hook, wait_for, watch_reviews_opening
from tests.support.program_terminal import ProgramTerminal
from tests.support.real_gemini import (  # noqa: F401 (fixtures)
    FIRST_RUN,
    GEMINI,
    GeminiTerminal,
    as_in_a_users_terminal,
    gemini_home,
    model_api,
    pending_review,
    returning_user,
)

pytestmark = pytest.mark.real_agent


def gated_auto_edit_gemini(make_nvim: Any, home: Path, api: FakeGeminiApi) -> tuple[Neovim, AutoEditGemini]:
    """Neovim with the gate installed for gemini, and gemini in auto_edit started from it by a
    returning user, past its questions."""
    env = {"HOME": str(home), "GEMINI_API_KEY": "stand-in-key", "GOOGLE_GEMINI_BASE_URL": api.base_url}
    nvim: Neovim = make_nvim(env=env)
    returning_user(home, nvim.workspace)  # the first run is tested in test_gemini_gate and test_real_gemini
    nvim.wait_state("running")
    nvim.api.command("set columns=120 lines=40")
    nvim.api.command("GeminiGate install gemini")
    wait_for(
        lambda: any("review gate for gemini installed" in n[0] for n in nvim.notifications()), what="told"
    )
    watch_reviews_opening(nvim)
    gemini = AutoEditGemini(nvim)
    gemini.answer_first_run(FIRST_RUN)
    return nvim, gemini


class AutoEditGemini(GeminiTerminal):
    """`:terminal gemini --approval-mode auto_edit`: edits run unasked, shell commands ask."""

    def __init__(self, nvim: Neovim) -> None:
        ProgramTerminal.__init__(self, nvim, f"{GEMINI} --approval-mode auto_edit")


def test_gemini_edits_the_gate_cannot_model_are_reviewed_as_gemini_writes_them_or_denied(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811 (the fixtures imported above)
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    nvim, gemini = gated_auto_edit_gemini(make_nvim, gemini_home, model_api)
    ws = nvim.workspace
    (ws / "ind.py").write_text("def f():\n    return 1\n")
    try:
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
    finally:
        nvim.quit()
        gemini.kill()


def test_gemini_in_auto_edit_is_denied_when_the_server_stops_during_a_review_or_is_stopped(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """F1 and R4 with gemini in auto_edit: :GeminiStop while gemini waits on a review denies the
    edit under review with the reason; its next edit, with the server stopped, is denied too."""
    nvim, gemini = gated_auto_edit_gemini(make_nvim, gemini_home, model_api)
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    try:
        model_api.call("write_file", file_path=str(target), content="print('bye')\n")
        model_api.say("First done.")
        gemini.submit("say bye")
        pending_review(gemini, target)
        nvim.api.command("GeminiStop")
        gemini.wait("First done.")
        assert target.read_text() == "print('hello')\n"
        assert "Neovim's review server" in json.dumps(function_responses(model_api.turns[-1])[-1])

        model_api.call("write_file", file_path=str(target), content="print('again')\n")
        model_api.say("Second done.")
        gemini.submit("say again")
        gemini.wait("Second done.")
        assert target.read_text() == "print('hello')\n"
        assert "Neovim's review server is stopped" in json.dumps(function_responses(model_api.turns[-1])[-1])
    finally:
        nvim.quit()
        gemini.kill()


def test_gemini_in_auto_edit_is_denied_when_neovim_is_too_busy_or_the_file_is_under_another_review(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """F2 and F3 with gemini in auto_edit: Neovim stopped (a stand-in for a long blocking command)
    when the edit comes: denied, with why, and no review opens late; a file under another gemini
    session's review: denied ("try again after"), and that review stays."""
    nvim, gemini = gated_auto_edit_gemini(make_nvim, gemini_home, model_api)
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    try:
        pid = nvim.lua("return vim.fn.getpid()")
        model_api.call("write_file", file_path=str(target), content="print('busy')\n")
        model_api.say("Busy done.")
        turns = len(model_api.turns)
        gemini.submit("say busy")
        wait_for(lambda: len(model_api.turns) > turns, what="gemini asked the model")
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(8)  # past the gateway's 5 s: the hook's answer is given meanwhile
        finally:
            os.kill(pid, signal.SIGCONT)
        gemini.wait("Busy done.")
        assert target.read_text() == "print('hello')\n"
        said = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert "not responding" in said or "did not answer" in said
        time.sleep(0.5)  # what waited for Neovim runs now: the open must not show a review
        assert nvim.lua("return #require('gemini_companion.review').pending()") == 0

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
    finally:
        nvim.quit()
        gemini.kill()
