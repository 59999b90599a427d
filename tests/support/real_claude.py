"""The real `claude` in Neovim's :terminal, against the scripted model API; its home, environment and
fixtures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_releases import OLDEST
from tests.support.fake_anthropic_api import FakeAnthropicApi
from tests.support.helpers import Neovim, wait_for
from tests.support.program_terminal import ProgramTerminal

CLAUDE, VERSION = OLDEST.program, OLDEST.version


API_KEY = "sk-ant-api03-" + "scripted-stand-in-key-0123456789abcdef"


PROMPT = "❯"


PENDING = "return vim.tbl_map(function(d) return d.path end, require('gemini_companion.review').pending())"


PENDING_BUFFERS = (
    "return vim.tbl_map(function(d) return d.proposed_buf end, require('gemini_companion.review').pending())"
)


@pytest.fixture(autouse=True)
def as_in_a_users_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neovim inherits the harness's environment; a user's terminal has no Claude Code session's own
    variables (present when the tests run from inside claude). A CI runner's markers stay: claude
    2.1.197 behaves the same with CI=true."""
    for name in list(os.environ):
        if name.startswith(("CLAUDE_CODE_", "CLAUDECODE")):
            monkeypatch.delenv(name)


class ClaudeTerminal(ProgramTerminal):
    """`:terminal claude` in a Neovim (or, with `buf`, the claude the plugin started there)."""

    name = "claude"

    def __init__(self, nvim: Neovim, buf: int | None = None, program: Path | None = None) -> None:
        super().__init__(nvim, None if buf is not None else str(program or CLAUDE), buf)

    def submit(self, line: str) -> None:
        """Type a line into claude's prompt and press Enter once claude shows it typed."""

        # 2.1.331 draws its input line merged with the rule below it: a space may show as "─".
        def typed() -> int:
            return self.text().replace("─", " ").count(line)

        before = typed()
        self.keys(line)
        self.wait_until(lambda: typed() > before, repr(line))  # (a no-break space follows the prompt sign)
        self.keys("\r")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


def claude_home(home: Path, workspace: Path, version: str | None = None) -> None:
    """A user's HOME where claude's first-run questions are answered, kept off the network."""
    config = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": version or VERSION,
        "theme": "dark",
        "autoUpdates": False,
        "diffTool": "auto",
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(workspace): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
                "allowedTools": [],
            }
        },
    }
    (home / ".claude").mkdir(parents=True)
    for place in (home / ".claude.json", home / ".claude" / ".claude.json"):
        place.write_text(json.dumps(config))
    (home / ".claude" / "settings.json").write_text(json.dumps({"theme": "dark", "autoUpdates": False}))


def claude_workspace(tmp_path: Path, version: str | None = None) -> tuple[Path, Path]:
    """A user's HOME with claude's first-run questions answered, and the workspace Neovim opens."""
    home = tmp_path / "home"
    workspace = tmp_path / "nvim" / "workspace"
    workspace.mkdir(parents=True)
    claude_home(home, workspace, version)
    return home, workspace


def claude_env(home: Path, model_api: FakeAnthropicApi) -> dict[str, str]:
    """What keeps claude offline and on the scripted API (nothing about the IDE: it finds that itself)."""
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": model_api.base_url,
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "TERM": "xterm-256color",
        "NO_PROXY": "127.0.0.1,localhost",
    }


@pytest.fixture
def model_api() -> Iterator[FakeAnthropicApi]:
    with FakeAnthropicApi() as api:
        yield api


def pending_review(nvim: Neovim, path: Path) -> int:
    find = (
        "for _, d in ipairs(require('gemini_companion.review').pending()) do"
        " if d.path == ... then return d.proposed_buf end end"
    )
    proposed = int(wait_for(lambda: nvim.lua(find, str(path)), 60, what=f"review of {path.name}"))
    return proposed


def claude_clients(nvim: Neovim) -> list[dict[str, Any]]:
    clients = nvim.server_state().get("clients") or []
    return [c for c in clients if c.get("transport") == "ws"]
