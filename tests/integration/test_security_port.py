"""A fixed port with `token_file` (a stable address for clients configured outside Neovim) never makes a
token another local user can use (the red-team's N9), and the port is ours again at once (N11).

N9: another user who squatted the port while Neovim was closed, or before it started, collected the token
from the victim's clients, then used it once the victim's server was up. Now the token file is written only
once the port is ours and removed when the server stops, and a token is used again only by a
:GeminiRestart: a token collected on a squatted port is never valid."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.support.helpers import Neovim, initialize_body, wait_for
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


def stable(make_nvim: Callable[..., Neovim], port: int, name: str = "nvim") -> Neovim:
    return make_nvim(
        name, init_lua=f"require('gemini_companion').setup({{ port = {port}, token_file = true }})"
    )


def token_file(nvim: Neovim) -> Path:
    return nvim.state / "nvim" / "gemini_companion" / "token"


def test_a_squatted_port_gets_no_token_file_and_names_who_holds_it(
    make_nvim: Callable[..., Neovim], tmp_path: Path
) -> None:
    port = free_port()
    with squatter(port, tmp_path) as received:
        nvim = stable(make_nvim, port)
        state = nvim.wait_state("failed")
        assert f"port {port} is not available" in state["error"]
        assert "held by user 'nobody' (uid 65534)" in state["error"]
        assert not token_file(nvim).exists()  # nothing a client could read and send there
    # The squatter is gone: the server comes up with a token nobody could have collected.
    nvim.api.command("GeminiStart")
    nvim.wait_state("running")
    token = token_file(nvim).read_text().strip()
    assert status_with(port, token) == 200
    assert "Bearer" not in received.read_text()


def test_a_token_from_an_earlier_neovim_or_before_a_stop_is_never_valid(
    make_nvim: Callable[..., Neovim],
) -> None:
    port = free_port()
    first = stable(make_nvim, port, "first")
    first.wait_state("running")
    old = token_file(first).read_text().strip()
    started = first.server_state()["started_at"]
    first.api.command("GeminiRestart")  # the port stays ours: the same token (claude reconnects)
    wait_for(
        lambda: (s := first.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="running again",
    )
    assert token_file(first).read_text().strip() == old
    first.api.command("GeminiStop")  # the port is free for anyone now: the file goes, the token dies
    wait_for(lambda: first.server_state().get("state") == "stopped", 30, what="stopped")
    assert not token_file(first).exists()
    first.api.command("GeminiStart")
    first.wait_state("running")
    after_stop = token_file(first).read_text().strip()
    assert after_stop != old and status_with(port, old) == 401
    first.quit()
    assert not token_file(first).exists()  # Neovim closed: no token for a squatter to collect
    second = stable(make_nvim, port, "second")
    second.wait_state("running")
    assert status_with(port, after_stop) == 401
    assert status_with(port, token_file(second).read_text().strip()) == 200


def test_a_fixed_port_is_ours_again_at_once_after_a_restart(make_nvim: Callable[..., Neovim]) -> None:
    port = free_port()
    nvim = stable(make_nvim, port)
    nvim.wait_state("running")
    # A connection the server closes itself (Connection: close) leaves a TIME_WAIT on its port.
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", headers={"Connection": "close"})
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as exc:
        assert exc.code == 401
    started = nvim.server_state()["started_at"]
    nvim.api.command("GeminiRestart")
    wait_for(
        lambda: (s := nvim.server_state()).get("state") == "running" and s.get("started_at") != started,
        what="running again",
    )
    assert nvim.server_state()["port"] == port


def test_two_neovims_with_one_parent_keep_their_own_files(make_nvim: Callable[..., Neovim]) -> None:
    """The red-team's N12 (info): discovery files carry the pid of Neovim's parent (the TUI, which gemini
    finds walking up from its shell), so two headless Neovims started by one process (here: this test)
    share it. Kept on purpose: the names differ by port, and an agent in either Neovim's :terminal is
    given that Neovim's own port (GEMINI_CLI_IDE_SERVER_PORT), so neither can be taken for the other."""
    one, two = make_nvim("one"), make_nvim("two")
    first, second = one.wait_discovery(), two.wait_discovery()
    pid_of = lambda disc: disc.path.name.split("-")[3]  # noqa: E731 (gemini-ide-server-<pid>-<port>.json)
    assert pid_of(first) == pid_of(second) and first.path.name != second.path.name
    for nvim, disc in ((one, first), (two, second)):
        # Set when Lua hears the server is ready, a moment after the file is written.
        wait_for(
            lambda n=nvim, d=disc: n.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") == str(d.port),
            what="the port in Neovim's environment",
        )
    one.quit()
    assert not first.path.exists() and second.path.exists()
