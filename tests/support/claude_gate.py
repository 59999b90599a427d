"""The claude releases and modes the gate tests run, a user's environment for each, and the Neovim
a module's gate scenarios share."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

import tests.support.real_claude as real
from tests.support.claude_releases import FIRST_AUTO, NEWEST, OLDEST, Release
from tests.support.fake_anthropic_api import FakeAnthropicApi
from tests.support.helpers import Neovim, wait_for

CASES = {
    "newest-auto": (NEWEST, None),
    "2.1.331-auto": (FIRST_AUTO, None),
    "oldest-acceptEdits": (OLDEST, "acceptEdits"),
}
# The oldest supported release and the newest (the project's rule for a matrix); the main gate flow
# (test_claude_gate.py) runs every case, 2.1.331 too, the first release that starts in auto mode.
OLDEST_AND_NEWEST = ("newest-auto", "oldest-acceptEdits")


def users_env(tmp_path: Path, home: Path, model_api: FakeAnthropicApi, release: Release) -> dict[str, str]:
    """claude's environment, with `claude` on the PATH as a user's is (health asks it its version)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").symlink_to(release.program)
    return {**real.claude_env(home, model_api), "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def choose_mode(home: Path, mode: str | None) -> None:
    """The user's own choice of claude's mode (None: the release's default)."""
    if mode is not None:
        settings = home / ".claude" / "settings.json"
        settings.write_text(
            json.dumps({**json.loads(settings.read_text()), "permissions": {"defaultMode": mode}})
        )


class GatedNeovim:
    """A Neovim with `:GeminiGate install claude` done, its user's HOME and the scripted model API,
    for one release and mode, shared by a module's scenarios. Each scenario starts a claude of its
    own (one claude over many turns garbles its screen) and may stop the server (the next one
    starts it again) or kill the host (`spend`: the next one gets a new Neovim)."""

    def __init__(self, base: Path, case: str) -> None:
        self.case = case
        self.release, mode = CASES[case]
        self.base = base
        self.api = FakeAnthropicApi().__enter__()
        self.home, self.workspace = real.claude_workspace(base, self.release.version)
        choose_mode(self.home, mode)
        self.env = users_env(base, self.home, self.api, self.release)
        self._nvim: Neovim | None = None
        self._started = 0

    def neovim(self) -> Neovim:
        """The running Neovim, its server running and the gate installed (a new one if spent)."""
        if self._nvim is None:
            self._started += 1
            with pytest.MonkeyPatch.context() as patch:  # as in a user's terminal (real_claude)
                for name in list(os.environ):
                    if name.startswith(("CLAUDE_CODE_", "CLAUDECODE")):
                        patch.delenv(name)
                self._nvim = Neovim(self.base / f"nvim{self._started}", env=self.env, cwd=self.workspace)
                self._nvim.start()
            nvim = self._nvim
            nvim.wait_state("running")
            nvim.api.command("GeminiGate install claude")
            wait_for(lambda: any("review gate for claude" in n[0] for n in nvim.notifications()), what="told")
        nvim = self._nvim
        if nvim.server_state().get("state") != "running":  # the last scenario stopped it
            nvim.api.command("GeminiStart")
            nvim.wait_state("running")
        return nvim

    def claude(self) -> real.ClaudeTerminal:
        """A new claude in Neovim's terminal, connected and at its prompt; the model's script empty."""
        self.api._script.clear()  # what a failed scenario left unanswered is not the next one's
        nvim = self.neovim()
        nvim.api.command("silent! tabonly | silent! only | enew")
        claude = real.ClaudeTerminal(nvim, program=self.release.program)
        claude.wait_until(lambda: real.claude_clients(nvim), "claude connected over the IDE WebSocket", 60)
        claude.wait(real.PROMPT)
        return claude

    def done(self, claude: real.ClaudeTerminal) -> None:
        """The scenario is over: its claude goes, and the reviews it left."""
        claude.kill()
        nvim = self._nvim
        if nvim is None:
            return
        with contextlib.suppress(Exception):  # (a Neovim a scenario broke is replaced)
            wait_for(lambda: not real.claude_clients(nvim), what="claude gone")
            for buf in nvim.lua(real.PENDING_BUFFERS):
                nvim.lua("vim.api.nvim_buf_delete(..., {force = true})", buf)
            nvim.api.command(f"silent! bwipeout! {claude.buf}")
            return
        self.spend()

    def spend(self) -> None:
        """This scenario broke the Neovim (killed its host): the next scenario gets a new one."""
        if self._nvim is not None:
            self._nvim.quit(timeout=3)
            self._nvim = None

    def close(self) -> None:
        if self._nvim is not None:
            self._nvim.quit(timeout=3)
        self.api.__exit__(None, None, None)
