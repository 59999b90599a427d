"""The real `gemini` in Neovim's :terminal, against the scripted model API; its home, first-run answers and
fixtures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
    prompt_sign = ">"  # before a line typed into its prompt (`*` in YOLO mode)

    def __init__(self, nvim: Neovim, flags: str = "") -> None:
        super().__init__(nvim, f"{GEMINI} {flags}".rstrip())

    def wait_until(self, predicate: Callable[[], object], what: str, timeout: float = 90.0) -> None:
        """As ProgramTerminal's, with room for node to (re)start gemini on a loaded machine (20 s
        and more with two test workers and another session's): a wait ends when the screen says so."""
        super().wait_until(predicate, what, timeout)

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
        typed = f"{self.prompt_sign} {line}"
        before = self.text().count(typed)
        self.keys(line)
        self.wait(typed, count=before + 1)
        self.enter(typed)

    def enter(self, typed: str) -> None:
        """Submit the prompt, which shows `typed` last, as a person would: press Enter again while
        it is still there."""
        # gemini takes an Enter within 30 ms of typed text for a pasted newline; a person's Enter comes
        # later. Ctrl-E (end of line, not text) before it makes it a submission. On a loaded machine
        # the typed line still stayed in the prompt now and then (gemini's key handler, renewed after
        # each render, can lag behind the screen it drew): a person seeing it there presses Enter again.
        for _ in range(5):
            self.keys("\x05")
            time.sleep(0.05)
            self.keys("\r")
            with contextlib.suppress(AssertionError):
                wait_for(lambda: not self.in_prompt(typed), 5, interval=0.1)
                return
        raise AssertionError(f"{typed!r} stayed in gemini's prompt")

    def in_prompt(self, typed: str) -> bool:
        """Whether `typed` is in gemini's input box (the last lines of its screen), not yet submitted."""
        bottom = [line for line in self.since_start().splitlines() if line.strip()][-6:]
        return any(typed in line for line in bottom) and not any(
            "Type your message" in line for line in bottom
        )

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


def returning_user(home: Path, workspace: Path, ide: bool = False) -> None:
    """What gemini's first run leaves in `home` (its own files, as it writes them): the workspace
    trusted, the API key chosen (and, with `ide`, IDE mode on, as `/ide enable` leaves it). Tests
    of something else start gemini once instead of twice (it restarts itself after the trust
    question); the first run itself stays tested where FIRST_RUN is answered on a fresh home
    (test_real_gemini, and test_real_gemini_agent's fresh home)."""
    settings = home / ".gemini" / "settings.json"
    chosen = {**json.loads(settings.read_text()), "security": {"auth": {"selectedType": "gemini-api-key"}}}
    if ide:
        chosen["ide"] = {"enabled": True}
    settings.write_text(json.dumps(chosen))
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(workspace): "TRUST_FOLDER"}))


def gate_installed(
    make_nvim: Any, home: Path, api: FakeGeminiApi, ide: bool = False, init_lua: str = ""
) -> Neovim:
    """A Neovim for a returning gemini user (with `ide`: who ran `/ide enable`) that installed the gate
    with `:GeminiGate install gemini`, the model the scripted API. (gemini's first run is
    test_real_gemini's.)"""
    env = {"HOME": str(home), "GEMINI_API_KEY": "stand-in-key", "GOOGLE_GEMINI_BASE_URL": api.base_url}
    nvim: Neovim = make_nvim(env=env, init_lua=init_lua)
    returning_user(home, nvim.workspace, ide=ide)
    nvim.wait_state("running")
    nvim.api.command("set columns=120 lines=40")
    nvim.api.command("GeminiGate install gemini")
    wait_for(
        lambda: any("review gate for gemini installed in" in n[0] for n in nvim.notifications()), what="told"
    )
    return nvim


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
