"""A fixed port with `token_file` (a stable address for clients configured outside Neovim) never makes a
token another local user can use (the red-team's N9), and the port is ours again at once (N11)
(moved from tests/integration/test_security_port.py: the Python server alone).

N9: another user who squatted the port while Neovim was closed, or before it started, collected the token
from the victim's clients, then used it once the victim's server was up. Now the token file is written only
once the port is ours and removed when the server stops, and a token is used again only by a
:GeminiRestart: a token collected on a squatted port is never valid."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fake_neovim import FakeNeovim, InProcessServer, serve
from tests.support.helpers import initialize_body, wait_for
from tests.support.other_users import squatter


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def status_with(port: int, token: str) -> int:
    """The HTTP status an MCP initialize with `token` gets on `port`."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=initialize_body("stolen-token-user"),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def stable(port: int) -> dict[str, object]:
    """The settings of a Neovim with a fixed address: `setup({ port = ..., token_file = true })`."""
    return {"port": port, "token_file": True}


def token_file(server: InProcessServer) -> Path:
    """`<stdpath('state')>/gemini_companion/token`: the state directory is START_INFO's."""
    return server.fake.state_dir / "gemini_companion" / "token"


def test_a_squatted_port_gets_no_token_file_and_names_who_holds_it(
    make_server: Callable[..., InProcessServer], tmp_path: Path
) -> None:
    port = free_port()
    with squatter(port, tmp_path) as received:
        server = make_server(config=stable(port), until="failed")
        state = server.status()
        assert f"port {port} is not available" in state["error"]
        assert "held by user 'nobody' (uid 65534)" in state["error"]
        assert not token_file(server).exists()  # nothing a client could read and send there
    # The squatter is gone: the server comes up with a token nobody could have collected.
    server.command("start")
    server.wait_state("running")
    token = token_file(server).read_text().strip()
    assert status_with(port, token) == 200
    assert "Bearer" not in received.read_text()


def test_a_token_from_an_earlier_neovim_or_before_a_stop_is_never_valid(tmp_path: Path) -> None:
    port = free_port()
    with serve(tmp_path / "first", config=stable(port)) as first:
        old = token_file(first).read_text().strip()
        first.restart()  # the port stays ours: the same token (claude reconnects)
        assert token_file(first).read_text().strip() == old
        first.command("stop")  # the port is free for anyone now: the file goes, the token dies
        wait_for(lambda: first.status().get("state") == "stopped", 30, what="stopped")
        assert not token_file(first).exists()
        first.command("start")
        first.wait_state("running")
        after_stop = token_file(first).read_text().strip()
        assert after_stop != old and status_with(port, old) == 401
    assert not token_file(first).exists()  # Neovim closed: no token for a squatter to collect
    with serve(tmp_path / "second", config=stable(port)) as second:
        assert status_with(port, after_stop) == 401
        assert status_with(port, token_file(second).read_text().strip()) == 200


def test_a_fixed_port_is_ours_again_at_once_after_a_restart(
    make_server: Callable[..., InProcessServer],
) -> None:
    port = free_port()
    server = make_server(config=stable(port))
    # A connection the server closes itself (Connection: close) leaves a TIME_WAIT on its port.
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", headers={"Connection": "close"})
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as exc:
        assert exc.code == 401
    server.restart()
    assert server.status()["port"] == port


def test_two_neovims_with_one_parent_keep_their_own_files(tmp_path: Path) -> None:
    """The red-team's N12 (info): discovery files carry the pid of Neovim's parent (the TUI, which gemini
    finds walking up from its shell), so two headless Neovims started by one process share it (here: both
    fake Neovims give the same ppid in START_INFO). Kept on purpose: the names differ by port, and an agent
    in either Neovim's :terminal is given that Neovim's own port (GEMINI_CLI_IDE_SERVER_PORT, which Lua
    sets from ON_READY's details), so neither can be taken for the other. Both Neovims share one TMPDIR,
    as two Neovims of one user do."""
    shared_tmp = tmp_path / "tmp"

    def in_shared_tmpdir(fake: FakeNeovim) -> None:
        fake.tmpdir = shared_tmp

    with serve(tmp_path / "one", setup=in_shared_tmpdir) as one:
        with serve(tmp_path / "two", setup=in_shared_tmpdir) as two:
            first, second = (Path(s.status()["discovery_file"]) for s in (one, two))
            pid_of = lambda path: path.name.split("-")[3]  # noqa: E731 (gemini-ide-server-<pid>-<port>.json)
            assert pid_of(first) == pid_of(second) and first.name != second.name
            for server in (one, two):
                assert server.fake.ready is not None and server.fake.ready["port"] == server.port
            assert one.port != two.port
        assert not second.exists() and first.exists()  # `two` closed: its file alone is gone


def test_a_restart_gets_its_fixed_port_even_when_the_last_stop_was_cut_short(
    make_server: Callable[..., InProcessServer], monkeypatch: Any
) -> None:
    """On a loaded machine the last server's stop can outlast its bound (0.45 s for a restart)
    before it reached the listening socket; the restart must still find the port free (a full
    run under load: "port … is not available (Address already in use)")."""
    from gemini_companion.serving import Serving

    port = free_port()
    server = make_server(config=stable(port))
    status_with(port, server.token)  # a client came: the server serves (Serving, its HTTP app)

    async def slow_stop(self: Serving, farewell_s: float = 0.3) -> None:
        await asyncio.sleep(2)  # past the bound: cut short before the listener closes

    monkeypatch.setattr(Serving, "stop", slow_stop)
    server.restart()
    assert server.status()["port"] == port
