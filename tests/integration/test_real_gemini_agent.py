"""The real `gemini` (tests/gemini_cli) as the agent beside the editor: started by `:Gemini`, given our tools
by the extension `:GeminiExtensionInstall` writes, and sent code by `:GeminiSend`. The model is the scripted
stand-in of test_real_gemini.py (its harness and fixtures are reused here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_gemini_api import FakeGeminiApi, function_responses, user_texts
from tests.support.helpers import Neovim, edit_to_review_ms, record_figure, wait_for, watch_reviews_opening
from tests.support.real_gemini import (  # noqa: F401 (fixtures)
    FIRST_RUN,
    GEMINI,
    AgentTerminal,
    GeminiTerminal,
    as_in_a_users_terminal,
    gemini_home,
    model_api,
    returning_user,
)

pytestmark = pytest.mark.real_agent


def declared_tools(request: dict[str, Any]) -> list[str]:
    """The function names a main-turn request offers the model."""
    return [
        decl["name"] for tool in request.get("tools", []) for decl in tool.get("functionDeclarations", [])
    ]


def gemini_beside_neovim(make_nvim: Any, home: Path, api: FakeGeminiApi) -> Neovim:
    """A Neovim whose :Gemini runs the real gemini, for a user who ran `/ide enable` and trusted
    this folder once before (test_real_gemini.py and the fresh-home test here cover the first
    time), its model the scripted API."""
    env = {"HOME": str(home), "GEMINI_API_KEY": "stand-in-key", "GOOGLE_GEMINI_BASE_URL": api.base_url}
    init = (
        f"vim.g.gemini_companion = {{ terminal = {{ cmd = {{ {json.dumps(str(GEMINI))} }}, size = 100 }} }}\n"
    )
    nvim: Neovim = make_nvim(env=env, init_lua=init)
    returning_user(home, nvim.workspace, ide=True)
    nvim.api.command("set columns=120 lines=40")
    return nvim


def test_gemini_started_by_neovim_uses_our_tools_and_gets_sent_code_as_text(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811 (the fixture imported above)
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    nvim = gemini_beside_neovim(make_nvim, gemini_home, model_api)
    code = nvim.workspace / "greet.py"
    code.write_text("def greet(name):\n    return 'hello ' + name\n\nprint(greet('world'))\n")
    nvim.api.command("edit greet.py")
    nvim.wait_state("running")
    nvim.api.command("GeminiExtensionInstall")

    nvim.api.command("Gemini")
    gemini = AgentTerminal(nvim)
    try:
        gemini.answer_first_run(FIRST_RUN)
        # Started by Neovim: connected to this Neovim as it starts, no command needed.
        gemini.wait_until(lambda: "1 open file" in gemini.since_start(), "connected at start")

        # The extension's server is this Neovim's: the model is offered our tools and one call reaches us.
        model_api.say("Hello.")
        gemini.submit("hi")
        gemini.wait("Hello.")
        offered = declared_tools(model_api.turns[0])
        (info_tool,) = [name for name in offered if name.endswith("nvim_info")]
        assert any(name.endswith("lsp_definition") for name in offered)
        # And told when they help (the extension's GEMINI.md).
        assert "prefer `lsp_definition`" in json.dumps(model_api.turns[0])
        model_api.call(info_tool)
        model_api.say("Neovim is running.")
        gemini.submit("Which Neovim is this")
        # gemini asks before an MCP tool runs; "Allow once" is preselected.
        gemini.wait('Allow execution of MCP tool "nvim_info" from server "nvim"?')
        gemini.keys("\r")
        gemini.wait_until(lambda: len(model_api.turns) >= 3, "the tool's answer sent to the model")
        (answer,) = function_responses(model_api.turns[2])
        assert answer["name"] == info_tool
        assert f'"pid":{nvim.api.call("getpid")}' in answer["response"]["output"]  # this Neovim answered
        gemini.wait("Neovim is running.")
        # Two sessions from the one gemini: its IDE channel and the extension's MCP server.
        gemini.wait_until(lambda: nvim.server_state().get("client_count") == 2, "two sessions from gemini")

        # :GeminiSend of a Visual selection: in the next prompt the model receives, whole.
        nvim.api.command("wincmd p")
        assert nvim.api.current.buffer.name == str(code)
        model_api.say("It greets.")
        nvim.api.input("1GVj:GeminiSend<CR>")
        gemini.wait("[Pasted Text: 6 lines]")  # one paste, shown folded: nothing was submitted
        nvim.api.command("GeminiFocus")
        gemini.keys("What does this do")
        gemini.wait("What does this do")
        gemini.enter("What does this do")
        gemini.wait("It greets.")
        prompt = "\n".join(user_texts(model_api.turns[-1]))
        assert (
            "@greet.py (lines 1-2):\n```python\ndef greet(name):\n    return 'hello ' + name\n```" in prompt
        )
        assert "What does this do" in prompt
        assert model_api.unexpected == []

        # The red-team's N1: a line of code rebuilt a paste end from a nested sequence, and the Ctrl-Y
        # after it switched gemini to YOLO mode (every tool call then runs unasked); Ctrl-C and `!`
        # typed a shell command. The line now arrives as text, and gemini stays as it was.
        nested_paste_end = "\x1b[20\x1b[201~1~"
        yolo, shell = "\x19", "\x03!touch PWNED\x05\r"  # Ctrl-Y; Ctrl-C, shell mode, a command, End, Enter
        (nvim.workspace / "util.py").write_text(
            f"def add(a, b):\n    return a + b  # {nested_paste_end}{yolo}\n# {nested_paste_end}{shell}\n"
        )
        nvim.api.command("wincmd p")
        nvim.api.command("edit util.py")
        assert "YOLO" not in gemini.text()
        nvim.api.input("1GVG:GeminiSend<CR>")
        gemini.wait("[Pasted Text: 7 lines]")  # one paste: what followed the rebuilt paste end was not typed
        assert "YOLO" not in gemini.text() and "shell mode" not in gemini.text().lower()
        model_api.say("It adds.")
        nvim.api.command("GeminiFocus")
        gemini.keys("What is this")
        gemini.wait("What is this")
        gemini.enter("What is this")
        gemini.wait("It adds.")
        prompt = "\n".join(user_texts(model_api.turns[-1]))
        assert "    return a + b  # [20[201~1~\n# [20[201~1~!touch PWNED\n" in prompt
        assert not (nvim.workspace / "PWNED").exists()
        assert "YOLO" not in gemini.text()
    finally:
        nvim.quit()
        gemini.kill()


def test_gemini_started_by_gemini_command_in_a_fresh_home_takes_its_own_allow_once(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """A new user's first :Gemini: asked once, IDE mode is turned on before gemini starts, so gemini
    connects as it starts and its own "Allow once" writes the file and closes Neovim's view, in the
    first session (a gemini that switched IDE mode on while running would wait for Neovim)."""
    settings = gemini_home / ".gemini" / "settings.json"
    before = json.loads(settings.read_text())
    env = {
        "HOME": str(gemini_home),
        "GEMINI_API_KEY": "stand-in-key",
        "GOOGLE_GEMINI_BASE_URL": model_api.base_url,
    }
    init = (
        f"vim.g.gemini_companion = {{ terminal = {{ cmd = {{ {json.dumps(str(GEMINI))} }}, size = 100 }} }}\n"
    )
    nvim: Neovim = make_nvim(env=env, init_lua=init)
    nvim.api.command("set columns=120 lines=40")
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    nvim.api.command("edit hello.py")
    nvim.wait_state("running")

    watch_reviews_opening(nvim)
    # Typed as a user would, the answer right after: 1, "Yes, turn it on (recommended)".
    nvim.api.input(":Gemini<CR>1<CR>")
    wait_for(lambda: json.loads(settings.read_text()).get("ide") == {"enabled": True}, what="IDE mode on")
    assert {
        k: v for k, v in json.loads(settings.read_text()).items() if k != "ide"
    } == before  # the rest kept
    gemini = AgentTerminal(nvim)
    try:
        asked = gemini.answer_first_run(FIRST_RUN)
        assert "Do you want to connect Neovim (workspace) to Gemini CLI?" not in asked
        gemini.wait_until(lambda: "1 open file" in gemini.since_start(), "connected at start")

        model_api.call("write_file", file_path=str(target), content="print('hello, world')\n")
        model_api.say("Done.")
        gemini.submit("Greet the world in hello.py")
        gemini.wait_until(
            lambda: nvim.lua("return #require('gemini_companion.review').pending()") == 1,
            "the review in Neovim",
        )
        record_figure(
            "edit_to_review",
            agent="gemini 0.61.0",
            path="IDE channel",
            ms=edit_to_review_ms(nvim, model_api.answered, "write_file"),
        )
        nvim.api.command("GeminiFocus")
        gemini.wait("Allow once")
        gemini.keys("\r")  # gemini's own "Allow once", preselected
        gemini.wait_until(lambda: target.read_text() == "print('hello, world')\n", "gemini wrote the file")
        wait_for(
            lambda: nvim.lua("return #require('gemini_companion.review').pending()") == 0, what="view closed"
        )
        gemini.wait("Done.")
        assert not any("switched IDE mode on" in n[0] for n in nvim.notifications())  # started with it on
    finally:
        nvim.quit()
        gemini.kill()
