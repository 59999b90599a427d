"""The review gate with the real `gemini` (tests/gemini_cli, its last release) in YOLO mode, where it
edits without asking: `:GeminiGate install gemini` writes its BeforeTool hook (our hook_client.py,
run isolated), and each edit opens as a review in Neovim. `:w` lands the user's text, `:q` denies
the edit with a reason the model reads. Offline: the model is the scripted stand-in."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_gemini_api import FakeGeminiApi, function_responses
from tests.support.helpers import (
    Neovim,
    answer,
    edit_to_review_ms,
    record_figure,
    wait_for,
    watch_reviews_opening,
)
from tests.support.real_gemini import (  # noqa: F401 (fixtures)
    FIRST_RUN,
    GEMINI,
    AgentTerminal,
    GeminiTerminal,
    as_in_a_users_terminal,
    gate_installed,
    gemini_home,
    model_api,
    pending_review,
    returning_user,
)

pytestmark = pytest.mark.real_agent


class YoloGemini(GeminiTerminal):
    """`:terminal gemini --yolo`: every tool call runs unasked."""

    prompt_sign = "*"  # gemini's prompt sign in YOLO mode

    def __init__(self, nvim: Neovim) -> None:
        super().__init__(nvim, "--yolo")


def test_gemini_in_yolo_mode_edits_only_what_the_user_accepts(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811 (the fixtures imported above)
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """The three answers a user gives in a review, to one gemini: `:w` with the user's own line
    (gemini writes the user's text), `:q` (denied, the model reads why), and `:q` after comments
    on two hunks (issue 28: the reason holds both comments with their file and line anchors)."""
    nvim = gate_installed(make_nvim, gemini_home, model_api)
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    settings = json.loads((gemini_home / ".gemini" / "settings.json").read_text())
    assert settings["privacy"] == {"usageStatisticsEnabled": False}  # the user's own settings stay
    (entry,) = settings["hooks"]["BeforeTool"]
    assert entry["matcher"] == "replace|write_file" and " -I " in entry["hooks"][0]["command"]

    watch_reviews_opening(nvim)
    gemini = YoloGemini(nvim)
    try:
        gemini.answer_first_run(FIRST_RUN)  # (a returning user: at most the IDE nudge)
        gemini.wait("YOLO")

        # gemini would write this at once; the gate opens it as a review, and the user's text lands.
        proposal = "print('hello, world')\n"
        model_api.call("write_file", file_path=str(target), content=proposal)
        model_api.say("Done.")
        gemini.submit("Greet the world in hello.py")
        pending_review(gemini, target)
        record_figure(
            "edit_to_review",
            agent="gemini 0.61.0",
            path="hook gate",
            ms=edit_to_review_ms(nvim, model_api.answered, "write_file"),
        )
        assert target.read_text() == "print('hello')\n"  # nothing written before the user decides
        nvim.api.input("Go# reviewed<Esc>:w<CR>")
        gemini.wait_until(
            lambda: target.read_text() == proposal + "# reviewed\n", "gemini wrote the user's text"
        )
        gemini.wait("Done.")

        # Closed in Neovim: denied, the file untouched, and the model reads why.
        accepted = target.read_text()
        model_api.call(
            "replace",
            file_path=str(target),
            instruction="Say goodbye",
            old_string="hello, world",
            new_string="goodbye",
        )
        model_api.say("Understood.")
        gemini.submit("Now say goodbye")
        pending_review(gemini, target)
        nvim.api.input(":q<CR>")
        gemini.wait("Understood.")
        assert target.read_text() == accepted
        result = function_responses(model_api.turns[-1])[-1]  # (each request holds the whole history)
        assert "The user rejected this edit of hello.py" in json.dumps(result)
        assert nvim.lua("return #require('gemini_companion.review').pending()") == 0

        # Comments on two hunks, then :q: the deny reason gemini gives the model holds both.
        calc = nvim.workspace / "calc.py"
        calc.write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
        model_api.call("write_file", file_path=str(calc), content="a = 10\nb = 2\nc = 3\nd = 40\n")
        model_api.say("Commented.")
        gemini.submit("make the numbers bigger")
        proposed = pending_review(gemini, calc)
        nvim.api.input("1G\\cwhy ten?<CR>")
        nvim.api.input("4G\\ckeep four<CR>")
        wait_for(
            lambda: len(nvim.lua("return require('gemini_companion.comments').list(true)")) == 2, what="2"
        )
        assert nvim.api.current.buffer.number == proposed
        nvim.api.input(":q<CR>")
        answer(nvim, "y")  # send the comments with the rejection
        gemini.wait("Commented.")
        assert calc.read_text() == "a = 1\nb = 2\nc = 3\nd = 4\n"
        result = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert "The user rejected this edit of calc.py" in result
        assert "calc.py:1\\n> a = 10\\nwhy ten?" in result and "calc.py:4\\n> d = 40\\nkeep four" in result
    finally:
        nvim.quit()
        gemini.kill()


def test_in_geminis_default_mode_with_ide_on_an_edit_is_reviewed_once(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """gemini's hook does not say its mode, so the gate reviews every edit; gemini then asks again
    through its IDE channel (openDiff), which gets the user's answer at once: one review, not two."""
    nvim = gate_installed(make_nvim, gemini_home, model_api, ide=True)
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    nvim.lua(
        "_G.opened = 0; vim.api.nvim_create_autocmd('User', {pattern = 'GeminiReviewOpened',"
        " callback = function() _G.opened = _G.opened + 1 end})"
    )
    gemini = GeminiTerminal(nvim)
    try:
        assert gemini.answer_first_run(FIRST_RUN) == []  # IDE mode on, the folder trusted: nothing asked
        gemini.wait_until(lambda: nvim.server_state().get("client_count"), "gemini's IDE channel connected")
        model_api.call("write_file", file_path=str(target), content="print('hello, world')\n")
        model_api.say("Done.")
        gemini.submit("Greet the world in hello.py")
        pending_review(gemini, target)
        nvim.api.input("Go# mine<Esc>:w<CR>")
        gemini.wait_until(lambda: target.read_text() == "print('hello, world')\n# mine\n", "gemini wrote it")
        gemini.wait("Done.")
        assert nvim.lua("return _G.opened") == 1
        assert nvim.lua("return #require('gemini_companion.review').pending()") == 0
    finally:
        nvim.quit()
        gemini.kill()


def post_hook(port: int, body: bytes, token: str | None) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    request = urllib.request.Request(f"http://127.0.0.1:{port}/hooks/gemini", body, headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_hook_route_holds_against_a_client_that_lies(nvim: Neovim, tmp_path: Path) -> None:
    """Without the token nothing is reviewed; with it, nonsense is refused, and a FIFO, a folder, a
    relative path with no working folder or content that is not text is denied with a reason:
    never a hang, never anything but a plain file's review, never let through unseen."""
    nvim.wait_state("running")
    found = nvim.wait_discovery()
    edit = json.dumps(
        {"tool_name": "write_file", "tool_input": {"file_path": str(nvim.workspace / "a"), "content": "x"}}
    )
    assert post_hook(found.port, edit.encode(), None)[0] == 401
    assert post_hook(found.port, edit.encode(), "wrong")[0] == 401
    assert post_hook(found.port, b"{not json", found.token)[0] == 400
    assert post_hook(found.port, b"[1]", found.token)[0] == 400
    fifo = nvim.workspace / "pipe"
    os.mkfifo(fifo)
    for tool_input in (
        {"file_path": str(fifo), "old_string": "a", "new_string": "b"},
        {"file_path": str(fifo), "content": "x"},
        {"file_path": str(nvim.workspace), "content": "x"},
        {"file_path": "relative.txt", "content": "x"},
        {"file_path": str(nvim.workspace / "b"), "content": 5},
    ):
        tool = "replace" if "old_string" in tool_input else "write_file"
        body = json.dumps({"tool_name": tool, "tool_input": tool_input}).encode()
        status, answer_body = post_hook(found.port, body, found.token)
        said = json.loads(answer_body)  # denied with why: never "no decision" for an edit tool
        assert (
            status == 200 and said["decision"] == "deny" and "did not let this edit through" in said["reason"]
        )
    assert nvim.lua("return #require('gemini_companion.review').pending()") == 0
    assert nvim.api.eval("1") == 1  # Neovim answers


def test_a_gemini_turn_that_edits_without_a_review_is_said(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """review.gate = 'never': gemini in YOLO mode writes unseen; its AfterAgent hook ends the turn.
    (IDE mode on, as :Gemini offers: the connected session is when Neovim notes the workspace.)"""
    init = "vim.g.gemini_companion = { review = { gate = 'never' } }\n"
    nvim = gate_installed(make_nvim, gemini_home, model_api, ide=True, init_lua=init)
    assert "AfterAgent" in (gemini_home / ".gemini" / "settings.json").read_text()
    target = nvim.workspace / "hello.py"
    target.write_text("print('hello')\n")
    gemini = YoloGemini(nvim)
    try:
        assert gemini.answer_first_run(FIRST_RUN) == []
        gemini.wait_until(lambda: nvim.server_state().get("client_count"), "gemini's IDE channel connected")
        wait_for(
            lambda: nvim.lua("return require('gemini_companion.changes').snapshotted()"),
            what="the workspace noted",
        )
        model_api.call("write_file", file_path=str(target), content="print('hello, world')\n")
        model_api.say("Done.")
        gemini.submit("Greet the world in hello.py")
        gemini.wait("Done.")
        assert target.read_text() == "print('hello, world')\n"
        said = "Gemini CLI changed 1 file without a review this turn: :GeminiTurn shows them"
        gemini.wait_until(lambda: any(said in n[0] for n in nvim.notifications()), "the turn's line")
    finally:
        nvim.quit()
        gemini.kill()


def test_a_project_that_switches_the_gate_off_is_warned_of_as_neovim_starts_gemini(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
) -> None:
    """The gate in the user's settings, the project's settings naming it in hooksConfig.disabled:
    `:Gemini` says so as it starts gemini, and not again when that gemini connects."""
    env = {
        "HOME": str(gemini_home),
        "GEMINI_API_KEY": "stand-in-key",
        "GOOGLE_GEMINI_BASE_URL": model_api.base_url,
    }
    init = (
        f"vim.g.gemini_companion = {{ terminal = {{ cmd = {{ {json.dumps(str(GEMINI))} }}, size = 100 }} }}\n"
    )
    nvim: Neovim = make_nvim(env=env, init_lua=init)
    returning_user(gemini_home, nvim.workspace, ide=True)
    nvim.api.command("set columns=120 lines=40")
    (nvim.workspace / ".gemini").mkdir()
    (nvim.workspace / ".gemini" / "settings.json").write_text(
        json.dumps({"hooksConfig": {"disabled": ["neovim-review-gate"]}})
    )
    nvim.wait_state("running")
    nvim.api.command("GeminiGate install gemini")
    wait_for(
        lambda: any("review gate for gemini installed in" in n[0] for n in nvim.notifications()), what="told"
    )

    def warnings() -> list[list[Any]]:
        return [n for n in nvim.notifications() if "gemini's edits are not reviewed" in n[0]]

    nvim.api.command("Gemini")
    gemini = AgentTerminal(nvim)
    try:
        ((said, level),) = wait_for(warnings, what="the warning")
        assert said == (
            "gemini-companion: this project's .gemini/settings.json switches the review gate off "
            '("hooksConfig": {"disabled": ["neovim-review-gate"]}): gemini\'s edits are not reviewed, '
            "though :GeminiGate installed the review gate; :GeminiChanges shows them after"
        )
        assert level == nvim.lua("return vim.log.levels.WARN")
        assert gemini.answer_first_run(FIRST_RUN) == []
        wait_for(lambda: nvim.server_state().get("client_count", 0) >= 1, 60, what="gemini connected")
        assert len(warnings()) == 1
    finally:
        nvim.quit()
        gemini.kill()


def restarted(nvim: Neovim) -> dict[str, Any]:
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")
    return wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started and s,
        what="running again",
    )


def bound(sock: socket.socket, port: int) -> bool:
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def test_a_running_geminis_edits_after_a_restart_a_stop_another_users_port_and_a_new_port(
    make_nvim: Any,
    gemini_home: Path,  # noqa: F811
    model_api: FakeGeminiApi,  # noqa: F811
    tmp_path: Path,
) -> None:
    """R4, one running gemini through what can become of the server it was started with (it keeps
    the port and token Neovim gave it when it started):
    - :GeminiRestart keeps them (the port is still free), so its next edit opens as a review;
    - after :GeminiStop its edit is denied with the reason, on its screen and to the model;
    - stopped, with another user listening on the old port and answering "allow" with content of
      its own: that listener is sent neither the token nor the edit, and the edit is denied;
    - started again on a new port (the old one taken meanwhile): denied, told where Neovim's review
      went and what to do."""
    import socket

    from tests.support.other_users import other_users_listener

    nvim = gate_installed(make_nvim, gemini_home, model_api)
    gemini = YoloGemini(nvim)
    try:
        gemini.answer_first_run(FIRST_RUN)
        gemini.wait("YOLO")

        # Restarted: still reviewed.
        target = nvim.workspace / "app.py"
        port, token = nvim.server_state()["port"], nvim.wait_discovery().token
        state = restarted(nvim)
        assert state["port"] == port and nvim.wait_discovery().token == token
        model_api.call("write_file", file_path=str(target), content="print('hello')\n")
        model_api.say("Done.")
        gemini.submit("Write app.py")
        pending_review(gemini, target)
        assert not target.exists()  # nothing written before the user decides
        nvim.api.input(":w<CR>")
        gemini.wait_until(lambda: target.exists() and target.read_text() == "print('hello')\n", "written")
        gemini.wait("Done.")

        # Stopped: denied with the reason.
        target = nvim.workspace / "stopped.py"
        nvim.api.command("GeminiStop")
        nvim.wait_state("stopped")
        model_api.call("write_file", file_path=str(target), content="print('hello')\n")
        model_api.say("Understood.")
        gemini.submit("Write stopped.py")
        gemini.wait("Understood.")
        assert not target.exists()
        gemini.wait("Neovim's review server is stopped")  # on gemini's screen
        result = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert "Neovim's review server is stopped: this edit was not made." in result
        assert "Ask the user to run :GeminiStart in Neovim" in result

        # Another user on the old port: sent nothing, and its "allow" does not count.
        target = nvim.workspace / "other.py"
        with other_users_listener(port, tmp_path / "attacker.log", str(target)) as log:
            model_api.call("write_file", file_path=str(target), content="print('hello')\n")
            model_api.say("Noted.")
            gemini.submit("Write other.py")
            gemini.wait("Noted.")
            assert log.read_text() == "listening\n"  # no token, no text
        assert not target.exists()
        result = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert "is held by user 'nobody' (uid 65534), not by this user's Neovim" in result

        # Back on a new port: denied, told where the review went.
        target = nvim.workspace / "moved.py"
        with socket.socket() as taken:
            # (bound, not listening: connections are refused). The other user's listener just
            # closed there, and its connection may linger in TIME_WAIT, which only reuse lets by.
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            wait_for(lambda: bound(taken, port), what=f"port {port} free to bind")
            nvim.api.command("GeminiStart")
            new_port = nvim.wait_discovery(exclude_port=port).port
            model_api.call("write_file", file_path=str(target), content="print('hello')\n")
            model_api.say("Moved on.")
            gemini.submit("Write moved.py")
            gemini.wait("Moved on.")
        assert not target.exists()
        result = json.dumps(function_responses(model_api.turns[-1])[-1])
        assert (
            f"Neovim's review moved to a new address after a restart (127.0.0.1:{new_port}, no longer "
            f"127.0.0.1:{port}): this edit was not made. Ask the user to start gemini again from Neovim."
        ) in result
    finally:
        nvim.quit()
        gemini.kill()
