"""The real `gemini` program (npm @google/gemini-cli, pinned in tests/gemini_cli) in Neovim's :terminal.

The model API is a scripted stand-in on 127.0.0.1 (tests/support/fake_gemini_api.py); everything else is
what a user meets: a fresh HOME, the first-run dialogs, `/ide enable`, and reviews answered in Neovim.
Nothing in the environment tells gemini it is in a dev container or over SSH:
in a container the plugin must see to it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import real_gemini
from tests.support.fake_gemini_api import FakeGeminiApi, function_responses, user_texts
from tests.support.helpers import Neovim, record_figure, wait_for
from tests.support.real_gemini import (
    FIRST_RUN,
    IN_CONTAINER,
    GeminiTerminal,
    pending_review,
)

pytestmark = pytest.mark.real_agent

# The shared fixtures, used here by name.
as_in_a_users_terminal = real_gemini.as_in_a_users_terminal
gemini_home = real_gemini.gemini_home
model_api = real_gemini.model_api


def server_env_set(nvim: Neovim) -> bool:
    """Whether the plugin has given Neovim's environment the server's variables (on_ready ran)."""
    return bool(nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT"))


def child_sees_remote_containers(nvim: Neovim) -> str:
    out: str = nvim.api.call("system", ["sh", "-c", 'printf %s "${REMOTE_CONTAINERS-unset}"'])
    return out


# An empty variable counts as unset for gemini too.
@pytest.mark.parametrize("inherited", [{}, {"SSH_CONNECTION": ""}], ids=["none", "empty"])
def test_terminal_children_get_remote_containers_in_a_container_while_running(
    make_nvim: Any, inherited: dict[str, str]
) -> None:
    nvim: Neovim = make_nvim(env=inherited)
    expected = "1" if IN_CONTAINER else "unset"
    wait_for(lambda: server_env_set(nvim), what="server variables set")
    assert child_sees_remote_containers(nvim) == expected
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    assert child_sees_remote_containers(nvim) == "unset"
    nvim.api.command("GeminiStart")
    wait_for(lambda: server_env_set(nvim), what="server variables set again")
    assert child_sees_remote_containers(nvim) == expected


def test_variables_the_user_set_are_left_alone(make_nvim: Any) -> None:
    ssh = "10.0.0.1 5000 10.0.0.2 22"
    over_ssh: Neovim = make_nvim("ssh", env={"SSH_CONNECTION": ssh})
    wait_for(lambda: server_env_set(over_ssh), what="server variables set")
    assert child_sees_remote_containers(over_ssh) == "unset"  # gemini dials 127.0.0.1 over SSH already
    own: Neovim = make_nvim("own", env={"REMOTE_CONTAINERS": "1"})
    wait_for(lambda: server_env_set(own), what="server variables set")
    own.api.command("GeminiStop")
    own.wait_state("stopped")
    assert child_sees_remote_containers(own) == "1"  # theirs, not ours to remove
    assert over_ssh.lua("return vim.env.SSH_CONNECTION") == ssh


def test_real_gemini_connects_from_the_terminal_and_reviews_edits_in_neovim(
    make_nvim: Any, gemini_home: Path, model_api: FakeGeminiApi
) -> None:

    env = {
        "HOME": str(gemini_home),
        "GEMINI_API_KEY": "stand-in-key",
        "GOOGLE_GEMINI_BASE_URL": model_api.base_url,
    }
    nvim: Neovim = make_nvim(env=env)
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    nvim.api.command("edit hello.py")
    nvim.wait_state("running")
    nvim.api.command("set columns=120 lines=40")

    started = time.monotonic()
    gemini = GeminiTerminal(nvim)
    sessions = [gemini]
    try:
        assert set(gemini.answer_first_run(FIRST_RUN)) == set(FIRST_RUN)
        prompt_at = time.monotonic()

        gemini.submit("/ide enable")
        gemini.wait("Connected to Neovim (workspace)")
        connected_at = time.monotonic()
        settings = gemini_home / ".gemini" / "settings.json"
        wait_for(lambda: json.loads(settings.read_text()).get("ide") == {"enabled": True}, what="ide.enabled")

        gemini.submit("/ide status")
        gemini.wait("Open files:")
        gemini.wait("hello.py (active)")

        # A proposed edit opens the review; the user adds a line and writes: gemini writes proposal + edit.
        proposal = "print('hello, world')\n"
        model_api.call("write_file", file_path=str(target), content=proposal)
        model_api.say("Done.")
        gemini.submit("Greet the world in hello.py")
        gemini.wait_until(lambda: model_api.turns, "the model asked")
        assert any("activeFile" in text and str(target) in text for text in user_texts(model_api.turns[0]))
        pending_review(gemini, target)
        # This gemini switched IDE mode on while it ran: its own Allow once would wait for Neovim.
        wait_for(lambda: any("switched IDE mode on after it started" in n[0] for n in nvim.notifications()))
        nvim.api.input("Go# reviewed<Esc>:w<CR>")
        gemini.wait("WriteFile  hello.py → Accepted (+2, -1)")
        gemini.wait_until(lambda: target.read_text() == proposal + "# reviewed\n", "gemini wrote the file")
        gemini.wait_until(lambda: len(model_api.turns) == 2, "the tool's result sent to the model")
        (result,) = function_responses(model_api.turns[1])
        assert result["name"] == "write_file" and "# reviewed" in json.dumps(
            result
        )  # told of the user's edit
        gemini.wait("Done.")

        # Another proposal, closed with :q: rejected, the file untouched.
        accepted = target.read_text()
        model_api.call(
            "replace",
            file_path=str(target),
            instruction="Say goodbye instead",
            old_string="hello, world",
            new_string="goodbye",
        )
        gemini.submit("Now say goodbye")
        proposed = pending_review(gemini, target)
        assert nvim.api.buffers[proposed][:] == ["print('goodbye')", "# reviewed"]
        nvim.api.input(":q<CR>")
        gemini.wait("Edit  hello.py → Rejected")
        gemini.wait("Request cancelled")
        assert target.read_text() == accepted
        assert nvim.lua("return #require('gemini_companion.review').pending()") == 0
        assert model_api.unexpected == []

        # The next day: gemini remembers all of it and connects as it starts.
        gemini.submit("/quit")
        gemini.wait_until(lambda: nvim.api.call("jobwait", [gemini.chan], 0) != [-1], "gemini quit")
        restarted = time.monotonic()
        again = GeminiTerminal(nvim)
        sessions.append(again)
        # gemini shows what Neovim has open once it is connected (no dialog, no command).
        again.wait_until(lambda: "1 open file" in again.since_start(), "connected at start")
        reconnected_at = time.monotonic()
        again.submit("/ide status")
        again.wait_until(lambda: "Connected to Neovim" in again.since_start(), "/ide status")
        record_figure(
            "real_gemini_connect",
            first_start_to_connected_s=round(connected_at - started, 2),
            first_run_dialogs_s=round(prompt_at - started, 2),
            ide_enable_to_connected_s=round(connected_at - prompt_at, 2),
            next_start_to_connected_s=round(reconnected_at - restarted, 2),
        )
    finally:
        nvim.quit()
        for session in sessions:
            session.kill()
