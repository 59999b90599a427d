"""What a newcomer saw on the screen (issue 25 items 7 and 8), checked on a real screen: Neovim in a tmux
pane, read with capture-pane, as the newcomer read it.

7. After `:w` in a review that opened from the agent's terminal, Neovim goes back to that terminal in
   Terminal mode, and `-- TERMINAL --` covered "accepted the edit to ...".
8. `:GeminiFocus` in a review's tab opened a second window of the agent there and squeezed the proposal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_terminal import Agent, agent_windows, start
from tests.support.helpers import DEV_NVIM, Neovim, wait_for
from tests.support.mcp_http import propose


class Screen:
    """Neovim (the plugin as `make run` loads it) in a tmux pane of its own, with a --listen socket."""

    def __init__(self, tmp: Path, agent: Agent) -> None:
        tmux = shutil.which("tmux")
        assert tmux, "tmux is needed (Debian package tmux)"
        self.tmux = [tmux, "-S", str(tmp / "tmux.sock")]
        self.workspace, self.tmpdir, self.sock = tmp / "workspace", tmp / "tmp", tmp / "nvim.sock"
        self.workspace.mkdir()
        self.tmpdir.mkdir(mode=0o700)
        init = tmp / "init.lua"
        cmd = json.dumps(json.dumps(agent.cmd))
        init.write_text(f"vim.g.gemini_companion = {{ terminal = {{ cmd = vim.json.decode({cmd}) }} }}\n")
        env = f"env TMPDIR={self.tmpdir} GEMINI_COMPANION_DEV_INIT={init} XDG_STATE_HOME={tmp / 'state'}"
        command = f"{env} {DEV_NVIM} --listen {self.sock}"
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-x", "120", "-y", "30", "-c", self.workspace, command],
            check=True,
        )

    def text(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True
        ).stdout

    def last_line(self) -> str:
        return self.text().rstrip("\n").splitlines()[-1]

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], check=False)


@pytest.fixture
def screen(tmp_path: Path) -> Iterator[tuple[Screen, Agent]]:
    agent = Agent(tmp_path / "agent")
    s = Screen(tmp_path, agent)
    try:
        yield s, agent
    finally:
        s.close()


def test_the_decision_line_shows_when_focus_returns_to_the_agent(screen: tuple[Screen, Agent]) -> None:
    s, agent = screen
    (s.workspace / "greet.txt").write_text("hello\n")
    wait_for(lambda: list(s.tmpdir.glob("gemini/ide/*.json")), 30, what="the server")
    s.keys(":Gemini", "Enter")  # the agent's terminal, in Terminal mode: the user is typing there
    agent.started()
    wait_for(lambda: "-- TERMINAL --" in s.text(), what="Terminal mode")
    disc = json.loads(next(s.tmpdir.glob("gemini/ide/*.json")).read_text())
    propose(disc["port"], disc["authToken"], str(s.workspace / "greet.txt"), "hello, world\n")
    wait_for(lambda: "greet.txt (proposed)" in s.text(), what="the review on screen")
    s.keys(":w", "Enter")
    wait_for(lambda: "-- TERMINAL --" in s.text() or "accepted" in s.text(), what="back in the terminal")
    time.sleep(0.5)  # what the user reads once the screen has settled
    assert "gemini-companion: accepted the edit to greet.txt" in s.last_line(), s.text()


def test_focus_from_a_review_tab_goes_to_the_agent_s_own_window(make_nvim: Any, tmp_path: Path) -> None:
    agent = Agent(tmp_path / "agent")
    nvim: Neovim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    (nvim.workspace / "notes.txt").write_text("one\n")
    nvim.api.command("Gemini")
    agent.started()
    agent_tab = nvim.api.current.tabpage.number
    disc = nvim.wait_discovery()
    propose(disc.port, disc.token, str(nvim.workspace / "notes.txt"), "two\n")
    wait_for(lambda: nvim.lua("return #vim.api.nvim_list_tabpages()") == 2, what="the review's tab")
    nvim.api.command("tablast")
    review_windows = nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)")
    nvim.api.command("GeminiFocus")
    assert nvim.api.current.tabpage.number == agent_tab
    assert nvim.api.current.buffer.number == agent_windows(nvim)[0]["buf"]
    assert (
        nvim.lua("return #vim.api.nvim_tabpage_list_wins(vim.api.nvim_list_tabpages()[2])") == review_windows
    )
    assert os.path.exists(agent.record)


def test_the_review_list_shows_all_its_keys(screen: tuple[Screen, Agent]) -> None:
    """9. The list's float was as wide as its rows: at common widths its title was cut to `<CR> go  a`."""
    s, _ = screen
    (s.workspace / "a.py").write_text("a\n")
    wait_for(lambda: list(s.tmpdir.glob("gemini/ide/*.json")), 30, what="the server")
    disc = json.loads(next(s.tmpdir.glob("gemini/ide/*.json")).read_text())
    propose(disc["port"], disc["authToken"], str(s.workspace / "a.py"), "b\n")
    wait_for(lambda: "a.py (proposed)" in s.text(), what="the review on screen")
    s.keys(":GeminiReviews", "Enter")
    wait_for(lambda: "Pending reviews (1)" in s.text(), what="the list")
    assert "<CR> go  a accept  r reject  c comment  s send comments  q close" in s.text(), s.text()
