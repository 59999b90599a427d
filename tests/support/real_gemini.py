"""The real `gemini` in Neovim's :terminal, against the scripted model API; its home, first-run answers and
fixtures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_gemini_api import FakeGeminiApi
from tests.support.helpers import (
    ROOT,
    Neovim,
    wait_for,
)
from tests.support.program_terminal import ProgramTerminal

GEMINI_DIR = ROOT / "tests" / "gemini_cli"


GEMINI = GEMINI_DIR / "node_modules" / ".bin" / "gemini"


VERSION = json.loads((GEMINI_DIR / "package.json").read_text())["dependencies"]["@google/gemini-cli"]


BANNER = f"Gemini CLI v{VERSION}"  # printed at each (re)start


# What gemini reads to decide whether a container's IDE is on 127.0.0.1 (see lua/gemini_companion/bridge.lua).
CONTAINER_HINTS = ("SSH_CONNECTION", "REMOTE_CONTAINERS", "VSCODE_REMOTE_CONTAINERS_SESSION")


IN_CONTAINER = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


# gemini's first-run questions, answered as a user would. No to the nudge: Yes runs /ide install, which cannot
# work for Neovim (and gemini asks again after it restarts for the trusted folder).
FIRST_RUN = {
    # The name is ideInfo.displayName: "Neovim (<project>)", the project being the test's workspace folder.
    "Do you want to connect Neovim (workspace) to Gemini CLI?": "2",
    "Do you trust the files in this folder?": "\r",  # "Trust folder" is preselected
    "How would you like to authenticate": "\r",  # "Use Gemini API Key" is preselected
    "Enter Gemini API Key": "\r",  # prefilled from GEMINI_API_KEY
}


@pytest.fixture(autouse=True)
def as_in_a_users_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neovim inherits the harness's environment; a user's terminal has neither of these:
    - anything that tells gemini where the IDE is (the plugin must handle containers itself);
    - a CI runner's markers (`CI`, `CONTINUOUS_INTEGRATION`, `CI_*`): gemini's UI (the is-in-ci
      package) then refuses to be interactive and exits "Invalid auth method selected"."""
    for name in CONTAINER_HINTS:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name in ("CI", "CONTINUOUS_INTEGRATION") or name.startswith("CI_"):
            monkeypatch.delenv(name)


class GeminiTerminal(ProgramTerminal):
    """`:terminal gemini` in a Neovim."""

    name = "gemini"

    def __init__(self, nvim: Neovim) -> None:
        super().__init__(nvim, GEMINI)

    def since_start(self) -> str:
        """The screen since gemini last (re)started: answered dialogs vanish from it, as on a real screen."""
        screen = self.text()
        return screen[screen.rfind(BANNER) :]

    def answer_first_run(self, answers: dict[str, str]) -> list[str]:
        """Answer the question gemini shows (the last on screen) until its prompt is ready; return them."""

        def showing() -> str | None:
            screen = self.since_start()
            asked = max(answers, key=screen.rfind)
            return asked if asked in screen else None

        seen: list[str] = []
        while True:
            self.wait_until(lambda: showing() or "Type your message" in self.since_start(), "a question")
            asked = showing()
            if asked is None:
                return seen
            seen.append(asked)
            self.keys(answers[asked])
            self.wait_until(lambda q=asked: q not in self.since_start(), f"{asked!r} answered")

    def submit(self, line: str) -> None:
        """Type a line into gemini's prompt and press Enter once gemini shows it typed."""
        self.wait("Type your message")
        typed = f"> {line}"
        before = self.text().count(typed)
        self.keys(line)
        self.wait(typed, count=before + 1)
        # gemini takes an Enter within 30 ms of typed text for a pasted newline; a person's Enter comes
        # later. Ctrl-E (end of line, not text) before it makes it a submission; on a loaded machine
        # the two arriving in one read still went in as a newline now and then (the line stayed in
        # the prompt), so the Enter comes apart, as a person's does.
        self.keys("\x05")
        time.sleep(0.05)
        self.keys("\r")

    def kill(self) -> None:
        """End gemini and the copy it restarted itself as (its own process group, as :terminal made it)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


@pytest.fixture
def gemini_home(tmp_path: Path) -> Path:
    """A user's fresh HOME, with the settings that keep gemini off the network."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return home


def returning_user(home: Path, workspace: Path) -> None:
    """What gemini's first run leaves in `home` (its own files, as it writes them): the workspace
    trusted, the API key chosen. Tests of something else start gemini once instead of twice (it
    restarts itself after the trust question); the first run itself stays tested where FIRST_RUN
    is answered on a fresh home."""
    settings = home / ".gemini" / "settings.json"
    chosen = {**json.loads(settings.read_text()), "security": {"auth": {"selectedType": "gemini-api-key"}}}
    settings.write_text(json.dumps(chosen))
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(workspace): "TRUST_FOLDER"}))


@pytest.fixture
def model_api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as api:
        yield api


def pending_review(gemini: GeminiTerminal, path: Path) -> int:
    """The proposal buffer of the review open in Neovim for `path` (waits for it, with focus on it)."""
    find = (
        "for _, d in ipairs(require('gemini_companion.review').pending()) do"
        " if d.path == ... then return d.proposed_buf end end"
    )
    gemini.wait_until(lambda: gemini.nvim.lua(find, str(path)), f"review of {path.name}")
    proposed = int(gemini.nvim.lua(find, str(path)))
    gemini.wait_until(lambda: gemini.nvim.api.current.buffer.number == proposed, "focus on the proposal")
    return proposed


class AgentTerminal(GeminiTerminal):
    """The terminal `:Gemini` opened (instead of the `:terminal` GeminiTerminal starts itself)."""

    def __init__(self, nvim: Neovim) -> None:  # not GeminiTerminal's: it would start another gemini
        find = "return require('gemini_companion.terminal').target().buf"
        ProgramTerminal.__init__(
            self, nvim, buf=int(wait_for(lambda: nvim.lua(find), what="the agent terminal"))
        )
