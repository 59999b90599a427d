"""The real `claude` (npm @anthropic-ai/claude-code, pinned in tests/claude_cli) in Neovim's :terminal.

The model API is a scripted stand-in on 127.0.0.1 (tests/support/fake_anthropic_api.py); everything else is
what a user meets: `:terminal claude` with nothing typed to connect it, reviews answered in Neovim, a
Visual selection that reaches the model.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support import real_claude
from tests.support.claude_releases import NEWEST
from tests.support.fake_anthropic_api import FakeAnthropicApi, request_texts
from tests.support.helpers import Neovim, wait_for
from tests.support.real_claude import (
    CLAUDE,
    PENDING,
    PROMPT,
    ClaudeTerminal,
    claude_clients,
    claude_env,
    claude_workspace,
    pending_review,
)

pytestmark = pytest.mark.real_agent

# The shared fixtures, used here by name.
as_in_a_users_terminal = real_claude.as_in_a_users_terminal
model_api = real_claude.model_api


def test_real_claude_connects_from_the_terminal_and_reviews_edits_in_neovim(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi
) -> None:
    home, workspace = claude_workspace(tmp_path)
    nvim: Neovim = make_nvim(env=claude_env(home, model_api), cwd=workspace)
    nvim.wait_state("running")
    wait_for(lambda: nvim.lua("return vim.env.CLAUDE_CODE_SSE_PORT"), what="CLAUDE_CODE_SSE_PORT set")
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")

    claude = ClaudeTerminal(nvim)
    try:
        # Connected with nothing typed: the exported port and the lock file are enough.
        claude.wait_until(lambda: claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        assert claude_clients(nvim)[0]["name"] == "claude-code"
        claude.wait(PROMPT)

        # Read then Edit: the review opens in Neovim; the user edits the proposal and writes it.
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        model_api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        proposed = pending_review(nvim, target)
        assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", proposed) == ["alpha", "BETA"]
        nvim.lua("vim.api.nvim_buf_set_lines(..., -1, -1, false, {'gamma'})", proposed)
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait_until(
            lambda: target.read_text() == "alpha\nBETA\ngamma\n", "claude wrote the accepted text"
        )
        claude.wait("Edited.")

        # A second edit, closed in Neovim: rejected, the file untouched.
        model_api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        claude.submit("capitalise alpha")
        proposed = pending_review(nvim, target)
        nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", proposed)
        claude.wait_until(lambda: nvim.lua(PENDING) == [], "the review closed in Neovim")
        claude.wait("rejected")  # ("User rejected update to notes.txt"; a redraw may interleave it)
        assert target.read_text() == "alpha\nBETA\ngamma\n"

        # Answered in claude's own prompt instead: claude writes its proposal, the review closes in Neovim.
        model_api.use("Edit", file_path=str(target), old_string="gamma", new_string="GAMMA")
        model_api.say("Edited again.")
        claude.submit("capitalise gamma")
        pending_review(nvim, target)
        claude.wait("Do you want to make this edit")
        claude.keys("\r")  # "Yes", preselected
        claude.wait_until(lambda: target.read_text() == "alpha\nBETA\nGAMMA\n", "claude wrote its proposal")
        claude.wait_until(lambda: nvim.lua(PENDING) == [], "the review closed in Neovim")
        claude.wait("Edited again.")

        # A Visual selection in Neovim reaches the next model request, as the user goes back to claude.
        nvim.api.command(f"split {target}")
        nvim.api.command("normal! ggVj")
        claude.wait("2 lines selected")
        nvim.api.command("wincmd j")
        assert nvim.api.current.buffer.number == claude.buf
        turns_before = len(model_api.turns)
        model_api.say("Seen.")
        claude.submit("what did I select")
        claude.wait("Seen.")
        sent = "\n".join(request_texts(model_api.turns[turns_before]))
        assert "alpha\nBETA" in sent
        # The send commands' @-mention lands in claude's input.
        mention = "return require('gemini_companion.mention').at_mentioned(...)"
        assert nvim.lua(mention, str(target), 1, 2) is True
        claude.wait("@notes.txt#L1-2")
        assert not model_api.unexpected or all("/v1/messages" not in u for u in model_api.unexpected)
    finally:
        claude.kill()


def test_real_claude_reconnects_by_itself_after_a_restart_on_a_stable_address(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi
) -> None:
    home, workspace = claude_workspace(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = f"vim.g.gemini_companion = {{ port = {port}, token_file = true }}"
    nvim: Neovim = make_nvim(env=claude_env(home, model_api), cwd=workspace, init_lua=settings)
    nvim.wait_state("running")
    claude = ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        first = {c["session_id"] for c in claude_clients(nvim)}
        nvim.api.command("GeminiRestart")
        # claude may be back before a poll sees the gap, so a new session is the proof, not the gap.
        claude.wait_until(
            lambda: any(c["session_id"] not in first for c in claude_clients(nvim)),
            "claude reconnected by itself (a new session)",
            60,
        )
    finally:
        claude.kill()


def test_sending_lines_with_no_claude_running_starts_it_and_mentions_them_once_connected(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi
) -> None:
    home, workspace = claude_workspace(tmp_path)
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    settings = f"vim.g.gemini_companion = {{ terminal = {{ cmd = {{ {json.dumps(str(CLAUDE))} }} }} }}"
    nvim: Neovim = make_nvim(env=claude_env(home, model_api), cwd=workspace, init_lua=settings)
    nvim.api.command("set columns=160 lines=40")
    nvim.api.command("edit notes.txt")
    nvim.api.command("2,3GeminiSend")  # no agent yet (and maybe the server still starting)
    find = "return require('gemini_companion.terminal').target().buf"
    claude = ClaudeTerminal(nvim, buf=int(wait_for(lambda: nvim.lua(find), 30, what="claude started")))
    try:
        claude.wait_until(lambda: claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        # Through its session, not typed: the mention shows in claude's input once it is connected.
        claude.wait("@notes.txt#L2-3")
        assert not [msg for msg, level in nvim.notifications() if level >= 4]
    finally:
        claude.kill()


def test_behind_an_https_proxy_claude_still_reaches_neovim_directly(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user behind a company proxy: HTTPS_PROXY set, nothing about 127.0.0.1 in NO_PROXY.
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    asked: list[bytes] = []
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(8)

    def refuse_all() -> None:  # a proxy that can reach nothing: records what it was asked, then hangs up
        while True:
            try:
                conn, _ = proxy.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    asked.append(conn.recv(200).split(b"\r\n")[0])

    threading.Thread(target=refuse_all, daemon=True).start()
    home, workspace = claude_workspace(tmp_path)
    env = {k: v for k, v in claude_env(home, model_api).items() if k != "NO_PROXY"}
    env["HTTPS_PROXY"] = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    nvim: Neovim = make_nvim(env=env, cwd=workspace)
    try:
        nvim.wait_state("running")
        port = nvim.lua("return vim.env.CLAUDE_CODE_SSE_PORT")
        claude = ClaudeTerminal(nvim)
        try:
            claude.wait_until(lambda: claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
            assert not [line for line in asked if f":{port} ".encode() in line]
        finally:
            claude.kill()
        # Stopped: the user's own NO_PROXY (none) is back.
        nvim.api.command("GeminiStop")
        nvim.wait_state("stopped")
        assert nvim.lua("return {vim.env.NO_PROXY, vim.env.no_proxy}") in ([], [None, None])
    finally:
        proxy.close()


def test_the_newest_claude_in_its_manual_mode_reviews_edits_in_neovim(
    tmp_path: Path, make_nvim: Any, model_api: FakeAnthropicApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest release, switched to manual mode as README says (its default, auto, edits without
    asking: test_claude_gate.py covers that with the gate): the same review as the oldest's."""
    monkeypatch.setattr(real_claude, "CLAUDE", NEWEST.program)
    monkeypatch.setattr(real_claude, "VERSION", NEWEST.version)
    home, workspace = claude_workspace(tmp_path)
    settings = home / ".claude" / "settings.json"
    settings.write_text(
        json.dumps({**json.loads(settings.read_text()), "permissions": {"defaultMode": "default"}})
    )
    nvim: Neovim = make_nvim(env=claude_env(home, model_api), cwd=workspace)
    nvim.wait_state("running")
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    claude = ClaudeTerminal(nvim)
    try:
        claude.wait_until(lambda: claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(PROMPT)
        # The review opens in Neovim; the user's edit lands.
        model_api.use("Read", file_path=str(target))
        model_api.use("Edit", file_path=str(target), old_string="beta", new_string="BETA")
        model_api.say("Edited.")
        claude.submit("capitalise beta in notes.txt")
        proposed = pending_review(nvim, target)
        nvim.lua("vim.api.nvim_buf_set_lines(..., -1, -1, false, {'gamma'})", proposed)
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", proposed)
        claude.wait_until(
            lambda: target.read_text() == "alpha\nBETA\ngamma\n", "claude wrote the accepted text"
        )
        claude.wait("Edited.")
        # Answered in claude's own prompt: claude writes its proposal, the review closes in Neovim.
        model_api.use("Edit", file_path=str(target), old_string="gamma", new_string="GAMMA")
        model_api.say("Edited again.")
        claude.submit("capitalise gamma")
        pending_review(nvim, target)
        claude.wait("Do you want to make this edit")
        # "Yes" is preselected; claude takes keys once its dialog is ready (a user presses again).
        for _ in range(10):
            claude.keys("\r")
            try:
                wait_for(lambda: target.read_text() == "alpha\nBETA\nGAMMA\n", 1.0)
                break
            except AssertionError:
                continue
        claude.wait_until(lambda: target.read_text() == "alpha\nBETA\nGAMMA\n", "claude wrote its proposal")
        claude.wait_until(lambda: nvim.lua(PENDING) == [], "the review closed in Neovim")
        claude.wait("Edited again.")
        # Closed in Neovim: rejected ("Rejected update to notes.txt"), the file untouched.
        model_api.use("Edit", file_path=str(target), old_string="alpha", new_string="ALPHA")
        claude.submit("capitalise alpha")
        proposed = pending_review(nvim, target)
        nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", proposed)
        claude.wait_until(lambda: "rejected update" in claude.text().lower(), "claude says it was rejected")
        assert target.read_text() == "alpha\nBETA\nGAMMA\n"
    finally:
        claude.kill()
