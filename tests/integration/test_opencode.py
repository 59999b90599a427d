"""OpenCode integration against a real `opencode serve` (npm opencode-ai), plus lifecycle hooks."""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import ROOT, Neovim, record_figure, wait_for
from tests.support.other_users import squatter

pytestmark = pytest.mark.real_agent

OPENCODE = ROOT / "tests" / "opencode" / "node_modules" / ".bin" / "opencode"
STANDIN = ROOT / "tests" / "fixtures" / "opencode_standin"


class Opencode:
    def __init__(self, tmp: Path, password: str | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        home = tmp / "home"
        home.mkdir(parents=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }
        env.pop("OPENCODE_SERVER_PASSWORD", None)
        if password:
            env["OPENCODE_SERVER_PASSWORD"] = password
        self.log = tmp / "opencode.log"
        self.proc = subprocess.Popen(
            [str(OPENCODE), "serve", "--hostname", "127.0.0.1", "--port", str(self.port)],
            env=env,
            cwd=tmp,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        wait_for(lambda: "listening on" in self.log.read_text(), 60, what="opencode serve")

    def mcp_status(self, directory: Path) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/mcp?directory={directory}", timeout=5) as resp:
            value: dict[str, Any] = json.loads(resp.read())
            return value

    def status_of(self, directory: Path, name: str = "nvim") -> str | None:
        entry = self.mcp_status(directory).get(name)
        return entry.get("status") if isinstance(entry, dict) else None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def opencode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opencode]:
    server = Opencode(tmp_path_factory.mktemp("opencode"))
    yield server
    server.stop()


def opencode_clients(nvim: Neovim) -> list[dict[str, Any]]:
    return [c for c in nvim.server_state().get("clients", []) if "opencode" in c["name"].lower()]


def test_register_by_command_follows_restarts_and_stops(nvim: Neovim, opencode: Opencode) -> None:
    nvim.wait_state("running")
    nvim.api.command(f"GeminiOpencodeRegister {opencode.url}")
    wait_for(lambda: opencode.status_of(nvim.workspace) == "connected", 30, what="connected")
    wait_for(lambda: any("registered as 'nvim'" in n[0] for n in nvim.notifications()), what="announced")
    wait_for(lambda: opencode_clients(nvim), what="OpenCode's MCP session in our status")
    state = wait_for(
        lambda: (
            (s := nvim.server_state()).get("opencode") == [{"url": opencode.url, "status": "connected"}] and s
        ),
        what="registration in the status",
    )

    started = state["started_at"]
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="restarted",
    )
    # Re-registered: OpenCode connects to the new server.
    wait_for(lambda: opencode_clients(nvim), 30, what="OpenCode connected to the restarted server")
    assert opencode.status_of(nvim.workspace) == "connected"

    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    wait_for(lambda: opencode.status_of(nvim.workspace) == "disabled", 10, what="disabled after stop")


def test_following_opencode_nvim(make_nvim, opencode: Opencode) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua=f"""
        vim.opt.runtimepath:prepend('{STANDIN}')
        require('gemini_companion').setup({{ auto_start = false, integrations = {{ opencode = true }} }})
    """
    )
    time.sleep(0.5)  # proves nothing happened within a window: no start before opencode.nvim's server runs
    assert nvim.server_state()["state"] == "stopped"
    # opencode.nvim starts its server: ours starts too and registers with it.
    nvim.lua(
        "require('opencode.state').store.set('opencode_server', { url = ..., port = ..., mode = 'serve',"
        " is_running = function() return true end })",
        opencode.url,
        opencode.port,
    )
    nvim.wait_state("running")
    wait_for(
        lambda: opencode.status_of(nvim.workspace) == "connected", 30, what="connected via opencode.nvim"
    )
    assert not [n for n in nvim.notifications() if "OpenCode" in n[0]]  # automatic: quiet on success
    nvim.lua("require('opencode.state').store.set('opencode_server', nil)")
    wait_for(
        lambda: "opencode" not in nvim.server_state() or not nvim.server_state()["opencode"],
        what="registration forgotten",
    )


def opencode_notes(nvim: Neovim) -> list[str]:
    return [n[0] for n in nvim.notifications() if "OpenCode" in n[0]]


def test_no_opencode_running_is_said_in_one_sentence_within_seconds(nvim: Neovim) -> None:
    nvim.wait_state("running")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    url = f"http://127.0.0.1:{dead}"
    asked = time.monotonic()
    nvim.api.command(f"GeminiOpencodeRegister {url}")
    # Within a few seconds: it retries only briefly, for a server that is still starting.
    note = wait_for(lambda: opencode_notes(nvim), 8, what="the answer")
    record_figure("opencode_register_no_server", seconds=round(time.monotonic() - asked, 2))
    assert note == [
        f"gemini-companion: could not register with OpenCode: no OpenCode server is listening at {url}; "
        f"start one (`opencode serve --port {dead}`) and run :GeminiOpencodeRegister again"
    ]
    failed = [{"url": url, "status": "failed", "error": note[0].split("OpenCode: ", 1)[1]}]
    wait_for(lambda: nvim.server_state().get("opencode") == failed, what="failure in the status")
    nvim.api.command("GeminiOpencodeRegister 127.0.0.1:4096")  # no scheme
    wait_for(
        lambda: (
            "gemini-companion: could not register with OpenCode: '127.0.0.1:4096' is not an OpenCode "
            "server's URL (like http://127.0.0.1:4096)" in opencode_notes(nvim)
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
    nvim: Neovim, tmp_path: Path
) -> None:
    nvim.wait_state("running")
    failing, working = FakeOpencode(404), FakeOpencode(200)
    try:
        nvim.api.command(f"GeminiOpencodeRegister {failing.url}")
        nvim.api.command(f"GeminiOpencodeRegister {working.url}")
        wait_for(lambda: len(working.registrations()) == 1, what="registered with the working one")
        note = wait_for(lambda: [n for n in opencode_notes(nvim) if "could not" in n], what="failure said")
        assert note == [
            "gemini-companion: could not register with OpenCode: "
            f"{failing.url} answered HTTP 404; is it an OpenCode server?"
        ]
        # Both are re-registered after :cd and a restart, or neither: the working one is the clock.
        nvim.api.command(f"cd {tmp_path}")
        wait_for(lambda: len(working.registrations()) == 2, what="re-registered after :cd")
        nvim.api.command("GeminiRestart")
        wait_for(lambda: len(working.registrations()) == 3, 30, what="re-registered after the restart")
        assert len(failing.registrations()) == 1
        # Until the user registers it again.
        nvim.api.command(f"GeminiOpencodeRegister {failing.url}")
        wait_for(lambda: len(failing.registrations()) == 2, what="registered again by the user")
    finally:
        failing.close()
        working.close()


def test_a_port_taken_by_another_user_gets_neither_token_nor_password(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    password = "opencode-password-for-the-test"
    server = Opencode(tmp_path / "opencode", password=password)
    nvim: Neovim = make_nvim(env={"OPENCODE_SERVER_PASSWORD": password})
    nvim.wait_state("running")
    nvim.api.command(f"GeminiOpencodeRegister {server.url}")
    connected = [{"url": server.url, "status": "connected"}]
    wait_for(lambda: nvim.server_state().get("opencode") == connected, 30, what="registered")
    token = nvim.wait_discovery().token
    # OpenCode goes away; another user takes its port.
    server.stop()
    with squatter(server.port, tmp_path) as received:
        nvim.api.command("GeminiRestart")  # re-registers: the listener is checked first
        expected = (
            f"gemini-companion: could not register with OpenCode: the program listening at {server.url} "
            "belongs to user 'nobody' (uid 65534), not to you, so it was sent nothing (neither our token "
            "nor an OpenCode password); stop it, or start `opencode serve --port <another port>` and run "
            ":GeminiOpencodeRegister with that URL"
        )
        wait_for(lambda: expected in opencode_notes(nvim), 30, what="the user told")
        nvim.api.command(f"cd {tmp_path}")
        nvim.api.command(f"GeminiOpencodeRegister {server.url}")  # the user tries again: told again
        wait_for(lambda: opencode_notes(nvim).count(expected) == 2, what="told again")
        new_token = nvim.wait_discovery().token
        log = received.read_text()
        assert log == "listening\n", log
        assert token not in log and new_token not in log and password not in log


def test_lifecycle_hooks_autocmds_and_statusline(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="""
        _G.__hooks = {}
        require('gemini_companion').setup({
          on_ready = function(info) table.insert(_G.__hooks, { 'on_ready', info }) end,
          on_stop = function() table.insert(_G.__hooks, { 'on_stop' }) end,
        })
        vim.api.nvim_create_autocmd('User', { pattern = { 'GeminiServerReady', 'GeminiServerStopped' },
          callback = function(ev) table.insert(_G.__hooks, { ev.match, ev.data }) end })
        _G.__line = require('gemini_companion').statusline()
    """
    )
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    assert nvim.lua("return _G.__line") == "Gemini ○"  # before the server ran: no error
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ● 0"
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ○"
    hooks = nvim.lua("return _G.__hooks")
    names = [h[0] for h in hooks]
    assert names == ["on_ready", "GeminiServerReady", "on_stop", "GeminiServerStopped"]
    ready = hooks[1][1]
    assert (
        ready["url"] == disc.url and ready["port"] == disc.port and ready["discovery_file"] == str(disc.path)
    )
    assert ready["pid"] > 0 and "token" not in json.dumps(ready).lower()
    assert disc.token not in json.dumps(hooks)


def test_fixed_port_and_token_file_give_a_stable_address(make_nvim) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nvim: Neovim = make_nvim(
        init_lua=f"require('gemini_companion').setup({{ port = {port}, token_file = true }})"
    )
    first = nvim.wait_discovery()
    assert first.port == port
    token_file = nvim.state / "nvim" / "gemini_companion" / "token"
    assert token_file.read_text().strip() == first.token
    assert token_file.stat().st_mode & 0o777 == 0o600
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (
            nvim.server_state().get("started_at", 0) > 0
            and nvim.server_state()["state"] == "running"
            and len(nvim.discovery_files()) == 1
            and json.loads(nvim.discovery_files()[0].read_text())["authToken"] == first.token
        ),
        what="same port and token after restart",
    )
    nvim.api.command("GeminiMcpConfig! claude")
    note = nvim.notifications()[-1][0]
    assert f"127.0.0.1:{port}/mcp" in note and "the token stays valid across :GeminiRestart" in note
    assert "gemini_companion/token" in note

    other: Neovim = make_nvim("other", init_lua=f"require('gemini_companion').setup({{ port = {port} }})")
    state = other.wait_state("failed")
    assert re.search(rf"port {port} is not available", state["error"])
