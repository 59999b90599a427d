"""OpenCode targets, the server alone (moved from tests/integration/test_opencode.py, where the real
`opencode serve` following :GeminiOpencodeRegister, restarts and opencode.nvim stays): no server at
a URL, a target that failed, and a port another user took. `:GeminiOpencodeRegister url` reaches the
host as the command `opencode_register` (agents/opencode/init.lua), run here as plugin.py runs it;
what the user is told is the fake Neovim's notifications (Lua adds "gemini-companion: ")."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_neovim import FakeNeovim, InProcessServer
from tests.support.helpers import record_figure, wait_for
from tests.support.opencode_server import Opencode
from tests.support.other_users import squatter


def opencode_notes(server: InProcessServer) -> list[str]:
    return [message for message, _level in server.fake.notifications if "OpenCode" in message]


def register(server: InProcessServer, url: str) -> None:
    """`:GeminiOpencodeRegister url`."""
    server.agent_command("opencode_register", url, True)


def test_no_opencode_running_is_said_in_one_sentence_within_seconds(server: InProcessServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    url = f"http://127.0.0.1:{dead}"
    asked = time.monotonic()
    register(server, url)
    # Within a few seconds: it retries only briefly, for a server that is still starting.
    note = wait_for(lambda: opencode_notes(server), 8, what="the answer")
    record_figure("opencode_register_no_server", seconds=round(time.monotonic() - asked, 2))
    assert note == [
        f"could not register with OpenCode: no OpenCode server is listening at {url}; "
        f"start one (`opencode serve --port {dead}`) and run :GeminiOpencodeRegister again"
    ]
    failed = [{"url": url, "status": "failed", "error": note[0].split("OpenCode: ", 1)[1]}]
    wait_for(lambda: server.status().get("opencode") == failed, what="failure in the status")
    register(server, "127.0.0.1:4096")  # no scheme
    wait_for(
        lambda: (
            "could not register with OpenCode: '127.0.0.1:4096' is not an OpenCode "
            "server's URL (like http://127.0.0.1:4096)" in opencode_notes(server)
        ),
        what="a bad URL refused",
    )


class FakeOpencode:
    """An HTTP server of ours standing in for OpenCode: records requests, answers `status`."""

    def __init__(self, status: int) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.requests.append((self.path, dict(self.headers), body))
                answer = b'{"nvim": {"status": "connected"}}' if status == 200 else b"no such thing"
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def registrations(self) -> list[tuple[str, dict[str, str], bytes]]:
        return [r for r in self.requests if r[0].startswith("/mcp?")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_target_that_failed_is_not_contacted_again_until_registered_again(
    server: InProcessServer, tmp_path: Path
) -> None:
    failing, working = FakeOpencode(404), FakeOpencode(200)
    try:
        register(server, failing.url)
        register(server, working.url)
        wait_for(lambda: len(working.registrations()) == 1, what="registered with the working one")
        note = wait_for(lambda: [n for n in opencode_notes(server) if "could not" in n], what="failure said")
        assert note == [
            f"could not register with OpenCode: {failing.url} answered HTTP 404; is it an OpenCode server?"
        ]
        # Both are re-registered after :cd and a restart, or neither: the working one is the clock.
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        server.fake.change_directory(elsewhere)
        wait_for(lambda: len(working.registrations()) == 2, what="re-registered after :cd")
        server.restart()
        wait_for(lambda: len(working.registrations()) == 3, 30, what="re-registered after the restart")
        assert len(failing.registrations()) == 1
        # Until the user registers it again.
        register(server, failing.url)
        wait_for(lambda: len(failing.registrations()) == 2, what="registered again by the user")
    finally:
        failing.close()
        working.close()


@pytest.mark.real_agent  # a real `opencode serve`, with a password
def test_a_port_taken_by_another_user_gets_neither_token_nor_password(
    make_server: Callable[..., InProcessServer], tmp_path: Path
) -> None:
    password = "opencode-password-for-the-test"
    opencode = Opencode(tmp_path / "opencode", password=password)

    def with_password(fake: FakeNeovim) -> None:
        fake.environ["OPENCODE_SERVER_PASSWORD"] = password  # in Neovim's environment

    server = make_server(setup=with_password)
    register(server, opencode.url)
    connected = [{"url": opencode.url, "status": "connected"}]
    wait_for(lambda: server.status().get("opencode") == connected, 30, what="registered")
    token = server.token
    # OpenCode goes away; another user takes its port.
    opencode.stop()
    with squatter(opencode.port, tmp_path) as received:
        server.restart()  # re-registers: the listener is checked first
        expected = (
            f"could not register with OpenCode: the program listening at {opencode.url} "
            "belongs to user 'nobody' (uid 65534), not to you, so it was sent nothing (neither our token "
            "nor an OpenCode password); stop it, or start `opencode serve --port <another port>` and run "
            ":GeminiOpencodeRegister with that URL"
        )
        wait_for(lambda: expected in opencode_notes(server), 30, what="the user told")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        server.fake.change_directory(elsewhere)
        register(server, opencode.url)  # the user tries again: told again
        wait_for(lambda: opencode_notes(server).count(expected) == 2, what="told again")
        new_token = server.token
        log = received.read_text()
        assert log == "listening\n", log
        assert token not in log and new_token not in log and password not in log
