"""The review gate fails closed (issue 38, R2, F1, F2) with the real claude (2.1.332 and 2.1.331
in auto mode, 2.1.197 in acceptEdits): an edit claude would apply unseen is reviewed as claude
would write it, or denied with a reason the model reads. Never "no decision": that would let it
land without the user seeing it. Offline: the model is the scripted stand-in."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import tests.support.real_claude as real
from tests.support.claude_gate import CASES, users_env
from tests.support.fake_anthropic_api import FakeAnthropicApi, request_texts
from tests.support.helpers import Neovim, post_hook, wait_for, watch_reviews_opening

pytestmark = pytest.mark.real_agent

model_api = real.model_api  # the fixture
as_in_a_users_terminal = real.as_in_a_users_terminal


def start_gated_claude(
    tmp_path: Path, make_nvim: Any, api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> tuple[Neovim, Path, real.ClaudeTerminal]:
    release, mode = CASES[case]
    monkeypatch.setattr(real, "CLAUDE", release.program)
    monkeypatch.setattr(real, "VERSION", release.version)
    home, workspace = real.claude_workspace(tmp_path)
    if mode is not None:  # the user's own choice of mode (the newer ones start in auto mode)
        settings = home / ".claude" / "settings.json"
        settings.write_text(
            json.dumps({**json.loads(settings.read_text()), "permissions": {"defaultMode": mode}})
        )
    nvim: Neovim = make_nvim(env=users_env(tmp_path, home, api, release), cwd=workspace)
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(
        lambda: any("review gate for claude installed in" in n[0] for n in nvim.notifications()), what="told"
    )
    watch_reviews_opening(nvim)
    claude = real.ClaudeTerminal(nvim)
    claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
    claude.wait(real.PROMPT)
    return nvim, workspace, claude


def told_the_model(api: FakeAnthropicApi, since: int) -> str:
    return "\n".join(text for turn in api.turns[since:] for text in request_texts(turn))


@pytest.mark.parametrize("case", CASES)
def test_claude_edits_the_gate_cannot_model_are_reviewed_as_claude_writes_them_or_denied(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    quoted, latin1, script = workspace / "msg.py", workspace / "latin1.txt", workspace / "run.sh"
    quoted.write_text('msg = "hello"\n')
    latin1.write_bytes(b"caf\xe9\nx = 2\n")
    try:
        # Binary content: denied, with why; nothing written.
        api.use("Write", file_path=str(script), content="echo PWNED\n# \u0000\n")
        api.say("Wrote it.")
        turns = len(api.turns)
        claude.submit("write run.sh")
        claude.wait("Wrote it.")
        assert not script.exists()
        assert "NUL bytes" in told_the_model(api, turns)

        # claude's own quote matching: the review shows what claude would write, and it lands.
        api.use("Read", file_path=str(quoted))
        api.use(
            "Edit",
            file_path=str(quoted),
            old_string="msg = \u201chello\u201d",
            new_string="msg = \u201cbye\u201d",
        )
        api.say("Quoted.")
        claude.submit("say bye in msg.py")
        proposed = real.pending_review(nvim, quoted)
        assert quoted.read_text() == 'msg = "hello"\n'
        assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", proposed) == [
            "msg = \u201cbye\u201d"
        ]
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait("Quoted.")
        assert quoted.read_text() == "msg = \u201cbye\u201d\n"

        # A file that is not UTF-8: never written unseen (claude may refuse it itself first).
        api.use("Read", file_path=str(latin1))
        api.use("Edit", file_path=str(latin1), old_string="x = 2", new_string="x = 3")
        api.say("Latin.")
        claude.submit("set x to 3")
        claude.wait("Latin.")
        assert latin1.read_bytes() == b"caf\xe9\nx = 2\n"
        assert nvim.lua(real.PENDING) == []
    finally:
        claude.kill()


@pytest.mark.parametrize("case", CASES)
def test_stopping_the_server_during_a_review_denies_the_edit_under_review(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """F1: :GeminiStop while claude waits on the review: the model is told, the file untouched."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    try:
        api.use("Read", file_path=str(target))
        api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        api.say("Edited.")
        turns = len(api.turns)
        claude.submit("capitalise beta in notes.txt")
        real.pending_review(nvim, target)
        nvim.api.command("GeminiStop")
        claude.wait("Edited.")
        time.sleep(1)  # what would land, lands at once (it did, < 0.5 s): look after a moment too
        assert target.read_text() == "alpha\nbeta\n"
        told = told_the_model(api, turns)  # the gate's answer, or its guard's: both say why
        assert "Neovim's review server stopped" in told or "this edit was not made" in told
    finally:
        claude.kill()


@pytest.mark.parametrize("case", CASES)
def test_a_neovim_too_busy_to_answer_denies_the_edit_and_opens_no_stale_review_later(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """F2: Neovim stopped (a stand-in for a long blocking command) when the edit comes: denied
    with the true reason; when Neovim runs again, the proposal does not open after the fact."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    pid = nvim.lua("return vim.fn.getpid()")
    api.use("Read", file_path=str(target))
    api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
    api.say("Edited.")
    turns = len(api.turns)
    try:
        claude.submit("capitalise beta in notes.txt")
        wait_for(lambda: len(api.turns) > turns, what="claude asked the model")
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for(
                lambda: (
                    "did not answer" in told_the_model(api, turns)
                    or "not responding" in told_the_model(api, turns)
                ),
                what="the model told Neovim did not answer",
                timeout=30,
            )
        finally:
            os.kill(pid, signal.SIGCONT)
        claude.wait("Edited.")
        assert target.read_text() == "alpha\nbeta\n"
        time.sleep(0.5)  # Neovim runs what waited for it: the open must not show a review now
        assert nvim.lua(real.PENDING) == []
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    finally:
        claude.kill()


@pytest.mark.parametrize("case", CASES)
def test_a_connection_that_drops_during_a_review_never_lets_the_edit_through(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The server's process dies while claude waits on a review: its mcp_tool hook fails (and a
    failed hook lets claude go on), but the guard beside it, whose connection dropped too, denies."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    try:
        api.use("Read", file_path=str(target))
        api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        api.say("Edited.")
        turns = len(api.turns)
        claude.submit("capitalise beta in notes.txt")
        real.pending_review(nvim, target)
        os.kill(int(nvim.server_state()["host_pid"]), signal.SIGKILL)
        claude.wait("Edited.")
        time.sleep(1)  # what would land, lands at once: look after a moment too
        assert target.read_text() == "alpha\nbeta\n"
        assert "this edit was not made" in told_the_model(api, turns)
    finally:
        claude.kill()


@pytest.mark.parametrize("case", CASES)
def test_a_notebook_edit_is_reviewed_before_it_lands(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """NotebookEdit (never gated before): the review shows the notebook claude
    would write; the user's change to the cell lands through NotebookEdit's own new_source."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    notebook = workspace / "nb.ipynb"
    cells = [
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "source": "x = 1",
            "execution_count": 1,
            "outputs": [],
        }
    ]
    original = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    notebook.write_text(json.dumps(original, indent=1) + "\n")
    try:
        api.use("Read", file_path=str(notebook))
        api.use(
            "NotebookEdit", notebook_path=str(notebook), cell_id="c1", new_source="x = 2", edit_mode="replace"
        )
        api.say("Notebook edited.")
        claude.submit("set x to 2 in the notebook")
        proposed = real.pending_review(nvim, notebook)
        assert json.loads(notebook.read_text()) == original  # nothing written before the user decides
        shown = "\n".join(nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", proposed))
        assert json.loads(shown)["cells"][0]["source"] == "x = 2"
        nvim.lua(
            "vim.api.nvim_buf_call(..., function() vim.cmd([[%s/x = 2/x = 42/]]) vim.cmd('write') end)",
            proposed,
        )
        claude.wait("Notebook edited.")
        assert json.loads(notebook.read_text())["cells"][0]["source"] == "x = 42"
    finally:
        claude.kill()


@pytest.mark.parametrize("case", CASES)
def test_an_edit_of_a_file_under_another_sessions_review_is_denied_with_why(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """F3: another agent's edit of notes.txt is under review; claude's edit of it is denied ("try
    again after"), not let through unseen, and the review open stays the other agent's."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    found = nvim.wait_discovery()
    other = {"tool_name": "write_file", "tool_input": {"file_path": str(target), "content": "gemini's\n"}}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # gemini's gate, waiting on its review
        gemini_waits = pool.submit(post_hook, found.port, found.token, "gemini", other)
        proposed = real.pending_review(nvim, target)
        try:
            api.use("Read", file_path=str(target))
            api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
            api.say("Edited.")
            turns = len(api.turns)
            claude.submit("capitalise beta in notes.txt")
            claude.wait("Edited.")
            assert target.read_text() == "alpha\nbeta\n"
            assert "under review for another session: try again after" in told_the_model(api, turns)
            assert real.pending_review(nvim, target) == proposed  # the other agent's review stays
        finally:
            nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", proposed)
            claude.kill()
        assert json.loads(gemini_waits.result(timeout=30))["decision"] == "deny"


@pytest.mark.parametrize("case", CASES)
def test_after_a_restart_claudes_edits_are_reviewed_and_after_a_stop_denied(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """R4 for claude: :GeminiRestart keeps the address, so the claude Neovim started is still
    reviewed (by its guard if its IDE connection has not come back yet); after :GeminiStop its
    edits are denied with the reason, never written unseen."""
    api = model_api
    nvim, workspace, claude = start_gated_claude(tmp_path, make_nvim, api, monkeypatch, case)
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    try:
        started = nvim.server_state()["started_at"]
        nvim.api.command("GeminiRestart")
        wait_for(
            lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
            what="running again",
        )
        api.use("Read", file_path=str(target))
        api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        proposed = real.pending_review(nvim, target)
        assert target.read_text() == "alpha\nbeta\n"
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait("Edited.")
        assert target.read_text() == "alpha\nBETA\n"

        nvim.api.command("GeminiStop")
        nvim.wait_state("stopped")
        api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        api.say("Tried.")
        turns = len(api.turns)
        claude.submit("capitalise alpha")
        claude.wait("Tried.")
        assert target.read_text() == "alpha\nBETA\n"
        assert "Neovim's review server is stopped: this edit was not made" in told_the_model(api, turns)
    finally:
        claude.kill()
