"""The review gate fails closed (issue 38, R2, F1, F2) with the real claude (2.1.332 in auto mode,
2.1.197 in acceptEdits: the newest and the oldest supported): an edit claude would apply unseen is
reviewed as claude would write it, or denied with a reason the model reads. Never "no decision":
that would let it land without the user seeing it. Offline: the model is the scripted stand-in.

A release's scenarios share one Neovim (its HOME, the model API, the gate installed), each with a
claude of its own (tests/support/claude_gate.py)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
from collections.abc import Iterator

import pytest

import tests.support.real_claude as real
from tests.support.claude_gate import OLDEST_AND_NEWEST, GatedNeovim
from tests.support.fake_anthropic_api import FakeAnthropicApi, request_texts
from tests.support.helpers import post_hook, wait_for

pytestmark = pytest.mark.real_agent

as_in_a_users_terminal = real.as_in_a_users_terminal


@pytest.fixture(scope="module", params=OLDEST_AND_NEWEST)
def gated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatedNeovim]:
    shared = GatedNeovim(tmp_path_factory.mktemp(request.param), request.param)
    try:
        yield shared
    finally:
        shared.close()


@pytest.fixture
def claude(gated: GatedNeovim) -> Iterator[real.ClaudeTerminal]:
    """This scenario's own claude, in the shared Neovim, gated, at its prompt."""
    terminal = gated.claude()
    try:
        yield terminal
    finally:
        gated.done(terminal)


def told_the_model(api: FakeAnthropicApi, since: int) -> str:
    return "\n".join(text for turn in api.turns[since:] for text in request_texts(turn))


def test_claude_edits_the_gate_cannot_model_are_reviewed_as_claude_writes_them_or_denied(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    api, nvim, workspace = gated.api, gated.neovim(), gated.workspace
    quoted, latin1, script = workspace / "msg.py", workspace / "latin1.txt", workspace / "run.sh"
    quoted.write_text('msg = "hello"\n')
    latin1.write_bytes(b"caf\xe9\nx = 2\n")
    script.unlink(missing_ok=True)
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


def test_stopping_the_server_during_a_review_denies_the_edit_under_review(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    """F1: :GeminiStop while claude waits on the review: the model is told, the file untouched."""
    api, nvim, target = gated.api, gated.neovim(), gated.workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    api.use("Read", file_path=str(target))
    api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
    api.say("Edited.")
    turns = len(api.turns)
    claude.submit("capitalise beta in notes.txt")
    real.pending_review(nvim, target)
    nvim.api.command("GeminiStop")
    # claude runs an edit its hooks let through before it asks the model again: by "Edited." it
    # would have landed.
    claude.wait("Edited.")
    assert target.read_text() == "alpha\nbeta\n"
    told = told_the_model(api, turns)  # the gate's answer, or its guard's: both say why
    assert "Neovim's review server stopped" in told or "this edit was not made" in told


def test_a_neovim_too_busy_to_answer_denies_the_edit_and_opens_no_stale_review_later(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    """F2: Neovim stopped (a stand-in for a long blocking command) when the edit comes: denied
    with the true reason; when Neovim runs again, the proposal does not open after the fact."""
    api, nvim, target = gated.api, gated.neovim(), gated.workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    pid = nvim.lua("return vim.fn.getpid()")
    api.use("Read", file_path=str(target))
    api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
    api.say("Edited.")
    turns, logged = len(api.turns), len(nvim.log_text())
    claude.submit("capitalise beta in notes.txt")
    wait_for(lambda: len(api.turns) > turns, what="claude asked the model")
    os.kill(pid, signal.SIGSTOP)
    try:
        # Frozen until the server gave up on it (its log, written by the host, which runs on).
        gave_up = "gate: denied Edit without a review: could not open the review in Neovim"
        wait_for(
            lambda: gave_up in nvim.log_text()[logged:],
            what="the server gave up waiting for Neovim",
            timeout=60,
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    # The call that waited for Neovim came before any of ours: Neovim has run it once it shows
    # claude's screen again, and the review must not have opened.
    claude.wait("Edited.")
    told = told_the_model(api, turns)
    assert "did not answer" in told or "not responding" in told
    assert target.read_text() == "alpha\nbeta\n"
    assert nvim.lua(real.PENDING) == []
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1


def test_a_notebook_edit_is_reviewed_before_it_lands(gated: GatedNeovim, claude: real.ClaudeTerminal) -> None:
    """NotebookEdit (never gated before): the review shows the notebook claude
    would write; the user's change to the cell lands through NotebookEdit's own new_source."""
    api, nvim = gated.api, gated.neovim()
    notebook = gated.workspace / "nb.ipynb"
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


def test_an_edit_of_a_file_under_another_sessions_review_is_denied_with_why(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    """F3: another agent's edit of notes.txt is under review; claude's edit of it is denied ("try
    again after"), not let through unseen, and the review open stays the other agent's."""
    api, nvim, target = gated.api, gated.neovim(), gated.workspace / "notes.txt"
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
        assert json.loads(gemini_waits.result(timeout=30))["decision"] == "deny"


def test_after_a_restart_claudes_edits_are_reviewed_and_after_a_stop_denied(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    """R4 for claude: :GeminiRestart keeps the address, so the claude Neovim started is still
    reviewed (by its guard if its IDE connection has not come back yet); after :GeminiStop its
    edits are denied with the reason, never written unseen."""
    api, nvim, target = gated.api, gated.neovim(), gated.workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
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


# Last: it kills the Neovim's host, so the scenario after it (the other release's) starts a new one.
def test_a_connection_that_drops_during_a_review_never_lets_the_edit_through(
    gated: GatedNeovim, claude: real.ClaudeTerminal
) -> None:
    """The server's process dies while claude waits on a review: its mcp_tool hook fails (and a
    failed hook lets claude go on), but the guard beside it, whose connection dropped too, denies."""
    api, nvim, target = gated.api, gated.neovim(), gated.workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    api.use("Read", file_path=str(target))
    api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
    api.say("Edited.")
    turns = len(api.turns)
    claude.submit("capitalise beta in notes.txt")
    real.pending_review(nvim, target)
    os.kill(int(nvim.server_state()["host_pid"]), signal.SIGKILL)
    claude.wait("Edited.")  # (an edit let through would have landed before claude asked again)
    assert target.read_text() == "alpha\nbeta\n"
    assert "this edit was not made" in told_the_model(api, turns)
    gated.spend()
