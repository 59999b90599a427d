"""Faults the Python server meets alone: a TMPDIR that does not exist yet, clients that vanish
mid-call and mid-stream (moved from tests/integration/test_faults.py, whose other tests need the
host's life with a real Neovim: a killed host, a Neovim blocked at a prompt, what Lua shows)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fake_neovim import FakeNeovim, FakeTool, InProcessServer
from tests.support.helpers import connects, mcp_client, wait_for


def test_missing_tmpdir_is_created_where_gemini_will_look(
    make_server: Callable[..., InProcessServer], tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "tmp"

    def in_missing_tmpdir(fake: FakeNeovim) -> None:
        fake.tmpdir = missing  # Neovim's $TMPDIR, as START_INFO gives it

    server = make_server(setup=in_missing_tmpdir)
    state = server.wait_state("running")
    assert state["discovery_file"].startswith(str(missing / "gemini" / "ide"))


def test_clients_that_vanish_mid_call_and_mid_stream(make_server: Callable[..., InProcessServer]) -> None:
    started, finished = [], []

    def slow(_args: dict[str, Any], done: Callable[..., None]) -> None:
        # Lua's vim.defer_fn(..., 500): the answer comes later, whoever still waits for it.
        started.append(1)

        def later() -> None:
            finished.append(1)
            done("ok")

        threading.Timer(0.5, later).start()

    server = make_server(setup=lambda fake: fake.add_tool(FakeTool("slow", slow, is_async=True)))
    disc = server.discovery()

    async def vanish_mid_call(count: int) -> None:
        async with mcp_client(disc.url, disc.token) as client:
            task = asyncio.ensure_future(client.call_tool("slow", {}))
            await asyncio.to_thread(wait_for, lambda: len(started) == count, what="the call in Lua")
            task.cancel()  # the client goes away without waiting

    for i in range(5):
        with contextlib.suppress(BaseException):  # the client side tears down however it likes
            asyncio.run(vanish_mid_call(i + 1))
    # mid-stream: open the GET stream, read a little, drop the connection
    for _ in range(5):
        sock = socket.create_connection(("127.0.0.1", disc.port))
        sock.sendall(
            (
                f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{disc.port}\r\n"
                f"Authorization: Bearer {disc.token}\r\nAccept: text/event-stream\r\n\r\n"
            ).encode()
        )
        sock.recv(100)
        sock.close()
    wait_for(lambda: len(finished) == 5, what="the abandoned calls finished in Lua")
    assert connects(disc.url, disc.token)
    wait_for(lambda: server.fake.pending_calls() == [], what="no calls left")
