"""The hook client (gemini's and agy's review gate) fails closed: an agent started from a Neovim
gets that Neovim's answer or a deny with the reason, and sends nothing to a listener that is not
this user's. Run as the agents run it: `python -I hook_client.py <agent>`, in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from gemini_companion.agents.gemini import gate as gemini_gate

from tests.support.other_users import other_users_listener

EDIT = {"tool_name": "write_file", "tool_input": {"file_path": "/w/app.py", "content": "print('hello')\n"}}


def run_client(env: dict[str, str], event: object = EDIT, agent: str = "gemini") -> tuple[Any, str]:
    """The client's answer (parsed; None when it printed nothing) and what it said on stderr."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    result = subprocess.run(
        [sys.executable, "-I", str(gemini_gate.CLIENT), agent],
        input=body,
        capture_output=True,
        env={"PATH": os.environ["PATH"], **env},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return (json.loads(result.stdout) if result.stdout.strip() else None), result.stderr.decode()


def from_neovim(port: int, token: str = "the-token", **more: str) -> dict[str, str]:
    return {"GEMINI_CLI_IDE_SERVER_PORT": str(port), "GEMINI_CLI_IDE_AUTH_TOKEN": token, **more}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def neovim_like(status: int, body: bytes) -> Iterator[tuple[int, list[tuple[str, str, bytes]]]]:
    """A listener of ours answering every POST with `status` and `body`; yields its port and what it got."""
    received: list[tuple[str, str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Authorization"], data))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"GEMINI_CLI_IDE_SERVER_PORT": "1"},  # (VS Code's terminal may set one of them: not ours)
    ],
)
def test_an_agent_not_started_from_a_neovim_gets_no_decision(env: dict[str, str]) -> None:
    answer, said = run_client(env)
    assert answer is None  # the agent goes on as its mode says: the one documented exception
    assert "not started from a Neovim that serves it" in said


def test_a_listener_of_ours_gets_the_edit_and_its_answer_is_the_hooks() -> None:
    allow = {"decision": "allow", "reason": "The user accepted this edit of app.py in Neovim."}
    with neovim_like(200, json.dumps(allow).encode()) as (port, received):
        assert run_client(from_neovim(port))[0] == allow
        assert run_client(from_neovim(port), agent="agy")[0] == allow
    assert [(path, auth) for path, auth, _ in received] == [
        ("/hooks/gemini", "Bearer the-token"),
        ("/hooks/agy", "Bearer the-token"),
    ]
    assert json.loads(received[0][2]) == EDIT


def test_nothing_listening_denies_with_the_reason() -> None:
    answer, _ = run_client(from_neovim(free_port()))
    assert answer["decision"] == "deny"
    assert "Neovim's review is not reachable at 127.0.0.1:" in answer["reason"]
    then = "Connection refused): this edit was not made. Ask the user to start gemini again"
    assert then in answer["reason"]


def test_a_stopped_a_moved_and_a_quit_neovim_each_say_so(tmp_path: Path) -> None:
    """Told apart by gemini's discovery files' names: `gemini-ide-server-<Neovim's pid>-<port>.json`."""
    port, ide = free_port(), tmp_path / "gemini" / "ide"
    ide.mkdir(parents=True)
    env = from_neovim(port, TMPDIR=str(tmp_path), GEMINI_CLI_IDE_PID=str(os.getpid()))
    answer, _ = run_client(env)
    assert answer["reason"] == (
        "Neovim's review server is stopped: this edit was not made. "
        "Ask the user to run :GeminiStart in Neovim, then to start gemini again from there."
    )
    (ide / f"gemini-ide-server-{os.getpid()}-{port + 1}.json").write_text("{}")
    answer, _ = run_client(env, agent="agy")
    assert answer["reason"] == (
        f"Neovim's review moved to a new address after a restart (127.0.0.1:{port + 1}, no longer "
        f"127.0.0.1:{port}): this edit was not made. Ask the user to start agy again from Neovim."
    )
    gone = subprocess.Popen(["true"])
    gone.wait()
    answer, _ = run_client({**env, "GEMINI_CLI_IDE_PID": str(gone.pid)})
    assert answer["reason"] == (
        f"The Neovim that started gemini (pid {gone.pid}) has quit: nothing reviews edits: "
        "this edit was not made."
    )


@pytest.mark.parametrize(
    ("status", "body", "why"),
    [
        (401, b'{"error": "unauthorized"}', "Neovim's review answered HTTP 401 Unauthorized"),
        (500, b"Internal Server Error", "Neovim's review answered HTTP 500 Internal Server Error"),
        (200, b"<html>not json</html>", "Neovim's review answered something that is not a JSON object"),
        (200, b'["allow"]', "Neovim's review answered something that is not a JSON object"),
    ],
)
def test_an_answer_that_is_not_a_hooks_denies_with_the_reason(status: int, body: bytes, why: str) -> None:
    with neovim_like(status, body) as (port, _):
        answer, _ = run_client(from_neovim(port))
    assert answer["decision"] == "deny"
    assert answer["reason"].startswith(f"{why}: this edit was not made. Ask the user to ")


def test_the_end_of_a_turn_is_never_denied() -> None:
    """A deny of gemini's AfterAgent makes it retry the turn: with Neovim gone it gets no decision."""
    answer, said = run_client(from_neovim(free_port()), {"hook_event_name": "AfterAgent", "prompt": "x"})
    assert answer is None and "this edit was not made" in said


def test_a_listener_of_another_user_is_sent_nothing_and_the_edit_is_denied(tmp_path: Path) -> None:
    port = free_port()
    with other_users_listener(port, tmp_path / "attacker.log") as log:
        answer, _ = run_client(from_neovim(port))
        assert log.read_text() == "listening\n"  # neither the token nor the edit's text
    assert answer["decision"] == "deny"
    assert answer["reason"] == (
        f"Neovim's review is not reachable: 127.0.0.1:{port}, its address when gemini started, is held by "
        "user 'nobody' (uid 65534), not by this user's Neovim, so neither the edit nor the token was sent "
        "there: this edit was not made. Ask the user to start gemini again from Neovim (after :GeminiStart "
        "if it is stopped)."
    )


def test_a_port_that_is_no_port_denies() -> None:
    answer, _ = run_client({"GEMINI_CLI_IDE_SERVER_PORT": "1; rm -rf /", "GEMINI_CLI_IDE_AUTH_TOKEN": "t"})
    assert answer["decision"] == "deny"
    assert "cannot use agent 'gemini' and port '1; rm -rf /'" in answer["reason"]


def test_claudes_guard_denies_in_claudes_own_words() -> None:
    """claude's guard (beside its mcp_tool hook) denies as a PreToolUse command hook answers."""
    event = {"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": "/w/a"}}
    answer, _ = run_client(from_neovim(free_port()), event, agent="claude")
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    assert "this edit was not made" in out["permissionDecisionReason"]


def test_another_editors_companion_on_the_port_leaves_the_agent_to_its_mode() -> None:
    """VS Code's gemini companion sets the same variables in its terminals; its server has no
    /hooks route and does not answer as Neovim's gate does: that agent was not started from Neovim."""
    with neovim_like(404, b"Not Found") as (port, _):
        answer, said = run_client(from_neovim(port))
    assert answer is None and "another editor's companion server" in said


def test_the_client_knows_neovims_answers_by_the_header_the_server_sends() -> None:
    """hook_client.py imports nothing of ours: its copy of the header's name is held to review_gate.py's."""
    from gemini_companion import hook_client
    from gemini_companion.core import review_gate

    assert hook_client.GATE_HEADER == review_gate.GATE_HEADER
    assert json.loads(hook_client.deny("why", "gemini")) == review_gate.denied("why")
