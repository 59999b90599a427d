"""The review gate with the real `claude` (the newest release, which starts in auto mode and edits
without asking, 2.1.331, the first that does, and the oldest supported in acceptEdits mode):
`:GeminiGate install claude` writes its PreToolUse hook, and an edit claude would apply unseen
opens as a review in Neovim. `:w` lands the user's own text; closing the review denies the edit,
and the model reads why.

Offline: the model API is the scripted stand-in (tests/support/fake_anthropic_api.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gemini_companion.agents.claude import gate

import tests.support.real_claude as real
from tests.support.claude_gate import CASES, OLDEST_AND_NEWEST, choose_mode, users_env
from tests.support.claude_releases import NEWEST
from tests.support.fake_anthropic_api import FakeAnthropicApi, request_texts
from tests.support.helpers import (
    Neovim,
    answer,
    edit_to_review_ms,
    record_figure,
    wait_for,
    watch_reviews_opening,
)
from tests.support.screen import RemoteScreen

pytestmark = pytest.mark.real_agent

model_api = real.model_api  # the fixture
as_in_a_users_terminal = real.as_in_a_users_terminal


@pytest.mark.parametrize("case", CASES)
def test_an_edit_claude_makes_without_asking_opens_as_a_review(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    release, mode = CASES[case]
    monkeypatch.setattr(real, "CLAUDE", release.program)
    monkeypatch.setattr(real, "VERSION", release.version)
    home, workspace = real.claude_workspace(tmp_path)
    choose_mode(home, mode)  # the user's own choice (the newest starts in auto mode by itself)
    nvim: Neovim = make_nvim(env=users_env(tmp_path, home, model_api, release), cwd=workspace)
    nvim.wait_state("running")

    nvim.api.command("GeminiGate install claude")
    wait_for(
        lambda: any("review gate for claude installed in" in n[0] for n in nvim.notifications()), what="told"
    )
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["PreToolUse"]
    assert hooks[0]["hooks"][0]["tool"] == "review_gate"
    health = nvim.health()
    section = health[health.index("Claude Code (claude in :terminal)") :]
    assert "review gate installed" in section
    said = next(line for line in section.splitlines() if "mode" in line and "the review gate opens" in line)
    assert "OK" in said  # the mode that skipped reviews is no longer a warning

    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    watch_reviews_opening(nvim)
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)

        # claude would apply this at once; the gate opens it as a review, and the user's text lands.
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        model_api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        proposed = real.pending_review(nvim, target)
        record_figure(
            "edit_to_review",
            agent=f"claude {release.version}",
            path="hook gate",
            ms=edit_to_review_ms(nvim, model_api.answered, "Edit"),
        )
        assert target.read_text() == "alpha\nbeta\n"  # nothing written before the user decides
        assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", proposed) == ["alpha", "BETA"]
        nvim.lua("vim.api.nvim_buf_set_lines(..., -1, -1, false, {'mine'})", proposed)
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait_until(lambda: target.read_text() == "alpha\nBETA\nmine\n", "claude wrote the user's text")
        claude.wait("Edited.")

        # Closed in Neovim: denied, the file untouched, and the model reads why.
        model_api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        model_api.say("Understood.")
        turns = len(model_api.turns)
        claude.submit("capitalise alpha")
        proposed = real.pending_review(nvim, target)
        nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", proposed)
        claude.wait("Understood.")
        assert target.read_text() == "alpha\nBETA\nmine\n"
        told = "\n".join(text for turn in model_api.turns[turns:] for text in request_texts(turn))
        assert "The user rejected this edit of notes.txt" in told
        assert nvim.lua(real.PENDING) == []
    finally:
        claude.kill()


def test_in_claudes_default_mode_the_gate_stays_out_and_claudes_own_review_opens(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi
) -> None:
    """Never two reviews of one edit: where claude asks, its openDiff opens the one review."""
    home, workspace = real.claude_workspace(tmp_path)  # the oldest release: its default mode asks
    nvim: Neovim = make_nvim(env=real.claude_env(home, model_api), cwd=workspace)
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(
        lambda: (home / ".claude" / "settings.json").read_text().count("review_gate") == 1, what="installed"
    )
    target = workspace / "notes.txt"
    target.write_text("alpha\n")
    watch_reviews_opening(nvim)
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        model_api.say("Edited.")
        claude.submit("capitalise alpha")
        proposed = real.pending_review(nvim, target)
        record_figure(
            "edit_to_review",
            agent=f"claude {real.VERSION}",
            path="IDE channel",
            ms=edit_to_review_ms(nvim, model_api.answered, "Edit"),
        )
        claude.wait("Do you want to make this edit")  # claude's own question: its openDiff review
        assert len(nvim.lua(real.PENDING)) == 1
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait_until(lambda: target.read_text() == "ALPHA\n", "claude wrote the accepted text")
        claude.wait("Edited.")
    finally:
        claude.kill()


def test_a_claude_not_connected_to_neovim_goes_on_and_says_why(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate in the user's settings, claude started where no Neovim serves it: no edit hangs."""
    monkeypatch.setattr(real, "CLAUDE", NEWEST.program)
    monkeypatch.setattr(real, "VERSION", NEWEST.version)
    home, workspace = real.claude_workspace(tmp_path)
    settings = home / ".claude" / "settings.json"
    entry = {"matcher": gate.HOOK_MATCHER, "hooks": [gate.HOOK]}
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "hooks": {"PreToolUse": [entry]}}))
    # A Neovim with Claude's channel switched off stands for "another terminal": no IDE connection.
    nvim: Neovim = make_nvim(
        env=users_env(tmp_path, home, model_api, NEWEST),
        cwd=workspace,
        init_lua="vim.g.gemini_companion = { claude = { enabled = false } }\n",
    )
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait(real.PROMPT)
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        model_api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        claude.wait("Edited.")
        assert target.read_text() == "alpha\nBETA\n"  # auto mode goes on, as it would without the gate
        claude.wait("MCP server 'ide' not connected")  # and claude says why nothing reviewed it
    finally:
        claude.kill()


def test_a_turn_that_edits_without_a_review_is_said_and_shown_as_that_turn(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review.gate = 'never': claude in auto mode edits unseen. Its Stop hook (:GeminiGate's) ends
    the turn: Neovim says what the turn changed, and :GeminiTurn lists it as that turn."""
    monkeypatch.setattr(real, "CLAUDE", NEWEST.program)
    monkeypatch.setattr(real, "VERSION", NEWEST.version)
    home, workspace = real.claude_workspace(tmp_path)
    nvim: Neovim = make_nvim(
        env=users_env(tmp_path, home, model_api, NEWEST),
        cwd=workspace,
        init_lua="vim.g.gemini_companion = { review = { gate = 'never' } }\n",
    )
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(lambda: "turn_ended" in (home / ".claude" / "settings.json").read_text(), what="installed")
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        model_api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        claude.wait("Edited.")
        assert target.read_text() == "alpha\nBETA\n"  # applied, unseen
        said = "Claude Code changed 1 file without a review this turn: :GeminiTurn shows them"
        wait_for(lambda: any(said in n[0] for n in nvim.notifications()), what="the turn's line")
        nvim.api.command("GeminiTurn")
        items = wait_for(lambda: nvim.api.call("getqflist"), what="the turn's changes listed")
        assert [nvim.api.call("bufname", i["bufnr"]) for i in items] == [str(target)]
        assert items[0]["text"].startswith("turn 1 (Claude Code): +1 −1")
    finally:
        claude.kill()


def test_rejecting_with_comments_on_two_hunks_tells_the_model_both(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: comments on two hunks of a gated review, then :q: the deny reason the model reads
    holds both comments with their file and line anchors and the lines they are about."""
    monkeypatch.setattr(real, "CLAUDE", NEWEST.program)
    monkeypatch.setattr(real, "VERSION", NEWEST.version)
    home, workspace = real.claude_workspace(tmp_path)
    nvim: Neovim = make_nvim(env=users_env(tmp_path, home, model_api, NEWEST), cwd=workspace)
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(lambda: "review_gate" in (home / ".claude" / "settings.json").read_text(), what="installed")
    target = workspace / "calc.py"
    target.write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    claude = real.ClaudeTerminal(nvim)
    screen = RemoteScreen(nvim)  # what the user sees, as the README's pictures show it
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)
        model_api.use("Read", file_path=str(target))
        model_api.use("Write", file_path=str(target), content="a = 10\nb = 2\nc = 3\nd = 40\n")
        model_api.say("Understood.")
        claude.submit("make the numbers bigger")
        proposed = real.pending_review(nvim, target)
        nvim.lua("vim.api.nvim_set_current_win(vim.fn.bufwinid(...))", proposed)
        nvim.api.input("1G\\cwhy ten?<CR>")
        nvim.api.input("4G\\ckeep four<CR>")
        wait_for(
            lambda: len(nvim.lua("return require('gemini_companion.comments').list(true)")) == 2, what="2"
        )
        wait_for(lambda: "» why ten?" in screen.text() and "» keep four" in screen.text(), what="shown")
        screen.picture("review-comments", "A review in Neovim with two comments")
        nvim.api.input(":q<CR>")
        answer(nvim, "y")  # send the comments with the rejection
        claude.wait("Understood.")
        # One line, and no "Press ENTER": the question is gone once answered.
        said = "gemini-companion: rejected the edit to calc.py (2 comments sent with it)"
        wait_for(lambda: screen.text().rstrip("\n").splitlines()[-1] == said, what="the decision line")
        assert "Press ENTER" not in screen.text()
        # claude redraws only the lines it changes, and the review's tab closing resized its window:
        # Ctrl-L, as a user would press it, repaints it whole; its terminal shows the reason.
        nvim.lua("vim.api.nvim_chan_send(vim.bo[...].channel, '\\12')", claude.buf)
        claude.wait("Review comments on your changes:")
        if screen.taking_pictures:  # (the picture waits for the repaint to reach the screen)
            wait_for(lambda: screen.text().count("Read 1 file") == 1, 30, what="claude repainted")
        screen.picture("review-comments-sent", "The comments as claude shows them")
        assert target.read_text() == "a = 1\nb = 2\nc = 3\nd = 4\n"
        told = "\n".join(text for turn in model_api.turns for text in request_texts(turn))
        assert "The user rejected this edit of calc.py" in told
        assert "calc.py:1\n> a = 10\nwhy ten?" in told and "calc.py:4\n> d = 40\nkeep four" in told
    finally:
        screen.close()
        claude.kill()


@pytest.mark.parametrize("case", OLDEST_AND_NEWEST)
def test_a_project_that_switches_hooks_off_is_warned_of_as_claude_connects(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The gate in the user's settings, the project's shared settings switching every hook off:
    claude (auto mode, or acceptEdits for the oldest) then edits unreviewed, and Neovim says so as
    claude connects, once."""
    release, mode = CASES[case]
    monkeypatch.setattr(real, "CLAUDE", release.program)
    monkeypatch.setattr(real, "VERSION", release.version)
    home, workspace = real.claude_workspace(tmp_path)
    choose_mode(home, mode)
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    nvim: Neovim = make_nvim(env=users_env(tmp_path, home, model_api, release), cwd=workspace)
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(
        lambda: any("review gate for claude installed in" in n[0] for n in nvim.notifications()), what="told"
    )

    def warnings() -> list[list[Any]]:
        return [n for n in nvim.notifications() if "claude's edits are not reviewed" in n[0]]

    assert warnings() == []  # said when claude comes
    target = workspace / "notes.txt"
    target.write_text("alpha\n")
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        ((said, level),) = wait_for(warnings, what="the warning")
        assert said == (
            "gemini-companion: this project's .claude/settings.json switches claude's hooks off "
            '("disableAllHooks": true): claude\'s edits are not reviewed, though :GeminiGate installed '
            "the review gate; :GeminiChanges shows them after"
        )
        assert level == nvim.lua("return vim.log.levels.WARN")

        # What it warns of: the edit lands with no review.
        claude.wait(real.PROMPT)
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        model_api.say("Edited.")
        claude.submit("capitalise alpha")
        claude.wait("Edited.")
        assert target.read_text() == "ALPHA\n"
        assert nvim.lua(real.PENDING) == []
        assert len(warnings()) == 1  # not again at each change of its sessions
    finally:
        claude.kill()


def test_what_a_slash_commands_shell_lines_change_is_shown_as_that_turn(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skill's or slash command's `!` shell lines (claude 2.1.332 runs PreSkillShellCommand hooks
    for them, not PreToolUse; a deny there can only refuse the whole line, never review what it
    changes): what they change is found as any unreviewed change is, and shown as that turn's
    when claude's turn ends."""
    monkeypatch.setattr(real, "CLAUDE", NEWEST.program)
    monkeypatch.setattr(real, "VERSION", NEWEST.version)
    home, workspace = real.claude_workspace(tmp_path)
    commands = workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "stamp").with_suffix(".md").write_text(  # claude reads commands/<name>.md
        "---\nallowed-tools: Bash(printf:*)\ndescription: stamp the workspace\n---\n"
        "!`printf 'stamped\\n' > stamp.txt`\n\nSay that it is stamped.\n"
    )
    nvim: Neovim = make_nvim(env=users_env(tmp_path, home, model_api, NEWEST), cwd=workspace)
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install claude")
    wait_for(lambda: "turn_ended" in (home / ".claude" / "settings.json").read_text(), what="installed")
    claude = real.ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)
        # claude 2.1.332 hands a command's shell line to the model to run ("[run this first, exactly
        # as written ...]"), through its Bash tool, which the command's allowed-tools lets run unasked.
        model_api.use("Bash", command="printf 'stamped\\n' > stamp.txt")
        model_api.say("Stamped.")
        claude.submit("/stamp")
        claude.wait("Stamped.")
        assert (workspace / "stamp.txt").read_text() == "stamped\n"
        said = "Claude Code changed 1 file without a review this turn: :GeminiTurn shows them"
        wait_for(lambda: any(said in n[0] for n in nvim.notifications()), what="the turn's line")
        nvim.api.command("GeminiTurn")
        items = wait_for(lambda: nvim.api.call("getqflist"), what="the turn's changes listed")
        assert [nvim.api.call("bufname", i["bufnr"]) for i in items] == [str(workspace / "stamp.txt")]
    finally:
        claude.kill()
