"""An idle Neovim's host: until the first client connects it has not loaded the MCP SDK, aiohttp
or OpenSSL (issue 29: most Neovims never see an agent); the first clients, arriving while they
load, are served as ever. The figures (idle RSS, spawn → discovery file, the first initialize's
wait) are `make bench`'s; what is checked here is what the host loaded, as the kernel maps it."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path
from typing import Any

from tests.support.helpers import Neovim, initialize_body, wait_for
from tests.support.mcp_http import EventStream, McpHttp

# Compiled pieces of what serving clients imports: aiohttp's HTTP parser, multidict (aiohttp),
# rpds (jsonschema, tool arguments), OpenSSL (anyio imports ssl). Pure Python modules leave no
# trace in the maps; these do.
SERVING_LIBRARIES = ("_http_parser", "_multidict", "rpds", "libssl", "libcrypto")

REGISTER = """
require('gemini_companion').register({
  name = 'before_any_client', description = 'registered while no client was connected',
  execute = function() return 'here' end,
})
"""


def mapped_libraries(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]).name for line in lines if ".so" in line}


def loaded(pid: int) -> list[str]:
    names = mapped_libraries(pid)
    return [piece for piece in SERVING_LIBRARIES if any(name.startswith(piece) for name in names)]


def test_the_sdk_loads_at_the_first_client_who_is_served_with_what_neovim_did_before(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    pid = int(disc.data["hostPid"])
    nvim.lua(REGISTER)  # and the editor's context changes: both before any client
    (nvim.workspace / "f.txt").write_text("one\n")
    nvim.api.command("edit f.txt")
    assert nvim.server_state()["serving"] is False
    assert loaded(pid) == []

    # Three clients at once, while the host imports the SDK: each is served, and the first
    # event stream carries the context Neovim had before.
    answers: dict[int, Any] = {}

    def client(n: int) -> None:
        c = McpHttp(disc.port, disc.token)
        c.initialize()
        names = {t["name"] for t in c.request("tools/list", {})["tools"]}
        answers[n] = (names, c.call("nvim_info")["structuredContent"]["pid"])
        if n == 0:
            stream = EventStream(c, disc.port)
            answers["context"] = stream.queue.get(timeout=10)[1]
            stream.close()
        c.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for n in range(3):
        names, nvim_pid = answers[n]
        assert {"before_any_client", "nvim_info", "openDiff", "companion_status"} <= names
        assert nvim_pid == nvim.proc.pid
    context = answers["context"]
    assert context["method"] == "ide/contextUpdate"
    assert context["params"]["workspaceState"]["openFiles"][0]["path"] == str(nvim.workspace / "f.txt")
    wait_for(lambda: nvim.server_state()["serving"] is True, what="the state says serving")
    assert loaded(pid) == list(SERVING_LIBRARIES)


def test_a_client_that_gives_up_during_the_import_leaves_no_session_behind(nvim: Neovim) -> None:
    """A client that closes its connection before its initialize is answered (a timeout shorter
    than the import, or an agent restarting) never learns its session: none stays behind."""
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    body = initialize_body("gave-up")
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{disc.port}\r\nAuthorization: Bearer {disc.token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", disc.port)) as gone:
        gone.sendall(head.encode() + body)  # and closes at once, while the host imports the SDK
    stays = McpHttp(disc.port, disc.token)
    stays.initialize()
    names = "return vim.tbl_map(function(c) return c.name end, require('gemini_companion').status().clients)"
    wait_for(lambda: nvim.lua(names) == ["bench"], what="only the client that stayed")
    stays.close()


def test_starting_an_agent_loads_the_sdk_before_it_connects(nvim: Neovim) -> None:
    """`:Gemini` is the moment an agent is sure to come: the host loads what serves clients while
    the agent starts (node: seconds), so its first requests do not wait for that."""
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    pid = int(disc.data["hostPid"])
    never_connects = [sys.executable, "-c", "import time; time.sleep(60)"]
    nvim.lua("require('gemini_companion').setup({ terminal = { cmd = ... } })", never_connects)
    assert nvim.server_state()["serving"] is False
    nvim.api.command("Gemini")
    wait_for(lambda: nvim.server_state()["serving"] is True, what="serving, with no client yet")
    assert loaded(pid) == list(SERVING_LIBRARIES)
    assert nvim.server_state()["client_count"] == 0
