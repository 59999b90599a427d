"""Who may get in, the Python server alone (moved from tests/integration/test_security.py, whose
tests that need real Lua or the host's life with Neovim stay there): DNS rebinding, browsers,
CORS, other local users, idle and slow sockets, connection caps, where the token may appear, and
arguments or calls that must never reach Neovim."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gemini_companion import seam

from tests.support.fake_neovim import FakeNeovim, FakeTool, InProcessServer, serve
from tests.support.helpers import initialize_body, mcp_client, record_figure, wait_for

INIT = initialize_body("sec")
# `make stress` (STRESS=1): the hostile inputs at full size (bench/reliability.md).
STRESS = os.environ.get("STRESS") == "1"


def raw(port: int, request: bytes) -> tuple[int, str]:
    """One hand-written HTTP request (so Host can be anything, or missing)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if length is not None and len(body) >= length:
                    break
    text = data.decode("latin-1")
    return int(text.split(" ", 2)[1]), text


def post(port: int, token: str, host: str | None, extra: str = "") -> tuple[int, str]:
    host_line = f"Host: {host}\r\n" if host is not None else ""
    req = (
        f"POST /mcp HTTP/1.1\r\n{host_line}Authorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{extra}Content-Length: {len(INIT)}\r\n"
        f"Connection: close\r\n\r\n"
    ).encode() + INIT
    return raw(port, req)


def http_request(sock: socket.socket, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send one request on a kept-alive socket; read its whole answer."""
    sock.sendall(head.encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        data += chunk
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(lines[0].split(" ", 2)[1]), headers, rest


def authed_head(
    port: int, token: str, method: str = "GET", extra: str = "", length: int | None = None
) -> str:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return (
        f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{size}{extra}\r\n"
    )


def connects(url: str, token: str) -> bool:
    async def go() -> bool:
        async with mcp_client(url, token) as client:
            return not (await client.call_tool("nvim_info", {})).is_error

    return asyncio.run(go())


def add_hanging_tool(fake: FakeNeovim) -> None:
    """An asynchronous tool that never answers (tools.lua's `ctx.on_cancel` is the fake's `cancelled`)."""
    fake.add_tool(FakeTool("hang", lambda _args, _done: None, is_async=True, timeout_ms=10000))


def test_dns_rebinding_browsers_and_cors(server: InProcessServer) -> None:
    disc = server.discovery()
    port, token = disc.port, disc.token
    for host in [
        None,
        "localhost.attacker.example",
        f"localhost.attacker.example:{port}",
        f"127.0.0.1.nip.io:{port}",
        f"127.0.0.1:{port + 1}",
        "127.0.0.1",
        f"[::1]:{port}",
        f"127.0.0.1:{port}.evil.example",
    ]:
        status, _ = post(port, token, host)
        assert status == (400 if host is None else 403), host  # HTTP/1.1 without Host: 400 from aiohttp
    for origin in ["null", "file://", "http://127.0.0.1", f"http://localhost:{port}", "https://example.com"]:
        status, text = post(port, token, f"127.0.0.1:{port}", f"Origin: {origin}\r\n")
        assert status == 403, origin
        assert "access-control-allow" not in text.lower()
    preflight = (
        f"OPTIONS /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: https://evil.example\r\n"
        "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    status, text = raw(port, preflight)
    assert status == 403 and "access-control-allow" not in text.lower()
    status, text = post(port, token, f"localhost:{port}")
    assert status == 200 and "access-control-allow" not in text.lower()
    status, text = post(port, "wrong", f"127.0.0.1:{port}")
    assert status == 401 and token not in text


@pytest.fixture
def shared_base() -> Iterator[Path]:
    """A directory every user may enter (0755, in /tmp): only the modes the server sets keep
    another user out of what it writes below."""
    path = Path(tempfile.mkdtemp(prefix="gemini-companion-secrets-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_other_users_cannot_read_the_secrets(shared_base: Path) -> None:
    setpriv = shutil.which("setpriv")
    if (
        setpriv is None
        or subprocess.run(["id", "-u"], check=False, capture_output=True, text=True).stdout.strip() != "0"
    ):
        pytest.fail("this test needs root and setpriv (util-linux) to act as another user")
    with serve(shared_base, config={"token_file": True}) as server:
        disc = server.discovery()
        token_file = server.fake.state_dir / "gemini_companion" / "token"
        for d in (server.fake.tmpdir, server.fake.state_dir):
            d.chmod(0o755)  # as $TMPDIR and ~/.local/state commonly are: only our modes matter
        for secret in (disc.path, token_file):
            other = subprocess.run(
                [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(secret)],
                check=False,
                capture_output=True,
                text=True,
            )
            assert other.returncode != 0 and "Permission denied" in other.stderr, secret
        listing = subprocess.run(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "ls", str(disc.path.parent)],
            check=False,
            capture_output=True,
            text=True,
        )
        assert listing.returncode != 0  # the 0700 directory cannot even be listed


def test_unreadable_bodies_and_malformed_requests(server: InProcessServer) -> None:
    disc = server.discovery()
    # D: a body that cannot be decoded is the client's error (400), not a 500
    status, text = post(disc.port, disc.token, f"127.0.0.1:{disc.port}", "Content-Encoding: gzip\r\n")
    assert status == 400 and "could not be read" in text
    # F: a malformed request that carries the token never puts the token in the log
    bad = (
        f"POST /mcp HTTP/1.1 extra\r\nHost: 127.0.0.1:{disc.port}\r\nAuthorization: Bearer {disc.token}"
        "\r\n\x00\x01 broken\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", disc.port), timeout=5) as sock:
        sock.sendall(bad)
        sock.recv(4096)
    status, _ = post(disc.port, disc.token, f"127.0.0.1:{disc.port}")
    assert status == 200
    assert disc.token not in server.log_text()


def test_connections_past_the_cap_are_refused_and_service_returns(server: InProcessServer) -> None:
    # Even clients that showed the token cannot make the host run out of file descriptors: past
    # the cap, a newcomer gets a 503 when no connection is left that never authenticated.
    disc = server.discovery()
    cap = 4 * 64  # 4 x max_sessions (default 64), at least 256
    held = []
    refusal = ""
    try:
        for _ in range(cap):
            sock = socket.create_connection(("127.0.0.1", disc.port), timeout=5)
            held.append(sock)
            status, _, _ = http_request(sock, authed_head(disc.port, disc.token))  # kept alive
            assert status == 400  # a GET without a session; what counts is the token
        for _ in range(8):  # a connection or two may still be on its way out
            probe = socket.create_connection(("127.0.0.1", disc.port), timeout=1)
            held.append(probe)
            try:
                refusal = probe.recv(4096).decode()
                break
            except TimeoutError:
                continue  # taken as a normal connection: keep it, and try the next
        assert refusal.startswith("HTTP/1.1 503") and "too many connections" in refusal, refusal
        assert server.wait_state("running")["client_count"] == 0  # the host is fine meanwhile
    finally:
        for sock in held:
            sock.close()
    _, text = wait_for(
        lambda: (answer := post(disc.port, disc.token, f"127.0.0.1:{disc.port}"))[0] == 200 and answer,
        what="service back once the connections closed",
    )
    assert '"serverInfo"' in text
    assert server.log_text().count("refusing new ones") == 1  # once per burst, not once per socket


def nested(depth: int) -> object:
    value: object = 1
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def test_too_deep_or_too_large_arguments_never_reach_neovim(
    make_server: Callable[..., InProcessServer],
) -> None:
    # Neovim's RPC parser closes a channel that carries a message nested ~30 deep; on the host's
    # own channel that drops the host. Such arguments are refused before any call into Neovim.
    # (The host's channel itself, reopened when Neovim closes it: test_security.py.)
    took: list[Any] = []

    def take(args: dict[str, Any]) -> str:
        took.append(args)
        return "took it"

    schema = {"type": "object", "properties": {"value": {"description": "anything"}}}
    server = make_server(setup=lambda fake: fake.add_tool(FakeTool("take", take, input_schema=schema)))
    disc = server.discovery()
    depths = range(17, 121) if STRESS else (30, 100, 40, 30)  # the SDK's parser stops ~128

    async def scenario() -> tuple[Any, list[Any], Any, Any]:
        async with mcp_client(disc.url, disc.token) as client:
            fine = await client.call_tool("take", {"value": nested(12)})
            deep = [await client.call_tool("take", {"value": nested(d)}) for d in depths]
            wide = await client.call_tool("take", {"value": [0] * 200_000})
            info = await client.call_tool("nvim_info", {})
            return fine, deep, wide, info

    fine, deep, wide, info = asyncio.run(scenario())
    assert not fine.is_error and fine.content[0].text == "took it"
    for result in deep:
        text = result.content[0].text
        assert result.is_error and "nested more than 16 levels deep; nothing was run" in text, text
    assert wide.is_error and "more than 100000 values" in wide.content[0].text
    assert len(took) == 1  # the refused ones never ran
    calls = [args for code, args in server.fake.calls if code == seam.CALL_TOOL and args[0] == "take"]
    assert len(calls) == 1  # nor did they reach Neovim at all
    assert not info.is_error and server.status()["state"] == "running"
    record_figure("hostile.arguments", inputs=len(deep) + 1, failures=0, deepest=max(depths))


def test_idle_sockets_of_anyone_cannot_lock_clients_out(server: InProcessServer) -> None:
    disc = server.discovery()
    # More sockets than the cap, no token, no request, held open.
    count = 3000 if STRESS else 300
    held = [socket.create_connection(("127.0.0.1", disc.port), timeout=5) for _ in range(count)]
    try:
        # A real client gets in at once: the oldest sockets that never authenticated make room.
        t0 = time.monotonic()
        assert connects(disc.url, disc.token)
        assert connects(disc.url, disc.token)
        record_figure("hostile.idle_sockets", held=count, two_clients_s=round(time.monotonic() - t0, 2))
    finally:
        for sock in held:
            sock.close()


def test_a_connection_that_brings_no_whole_request_is_dropped(server: InProcessServer) -> None:
    disc = server.discovery()
    port = disc.port
    idle = socket.create_connection(("127.0.0.1", port), timeout=60)
    slow_head = socket.create_connection(("127.0.0.1", port), timeout=60)
    slow_head.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # never finished
    slow_body = socket.create_connection(("127.0.0.1", port), timeout=60)
    slow_body.sendall((authed_head(port, disc.token, "POST", length=100)).encode() + b'{"jsonrpc":')
    t0 = time.monotonic()
    assert idle.recv(100) == b""  # closed by the server
    assert slow_head.recv(100) == b""
    answer = slow_body.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 408") and "did not arrive within 10 s" in answer, answer
    record_figure("hostile.incomplete_requests_dropped", seconds=round(time.monotonic() - t0, 1))
    for sock in (idle, slow_head, slow_body):
        sock.close()
    assert connects(disc.url, disc.token)


def test_a_client_gone_mid_call_cancels_the_call_in_neovim(
    make_server: Callable[..., InProcessServer],
) -> None:
    # (That Lua hands the cancel to the tool's ctx.on_cancel: test_tools.py.)
    server = make_server(setup=add_hanging_tool)
    disc = server.discovery()
    sock = socket.create_connection(("127.0.0.1", disc.port), timeout=10)
    status, headers, _ = http_request(
        sock, authed_head(disc.port, disc.token, "POST", length=len(INIT)), INIT
    )
    assert status == 200
    session = headers["mcp-session-id"]
    call = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}
    ).encode()
    extra = f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    sock.sendall(authed_head(disc.port, disc.token, "POST", extra, len(call)).encode() + call)
    wait_for(lambda: len(server.fake.pending_calls()) == 1, what="the call running in Lua")
    sock.close()  # the client goes away without waiting for the answer
    reasons = wait_for(lambda: [why for _, why in server.fake.cancelled], what="the tool told")
    assert reasons == ["cancelled"]
    assert server.fake.pending_calls() == []


def test_pending_asynchronous_calls_are_bounded_per_session(
    make_server: Callable[..., InProcessServer],
) -> None:
    server = make_server(config={"max_in_flight": 4}, setup=add_hanging_tool)
    disc = server.discovery()

    def in_flight() -> int:
        return len(server.fake.pending_calls())

    async def until(count: int) -> None:
        await asyncio.to_thread(wait_for, lambda: in_flight() >= count, what=f"{count} calls in Lua")

    async def scenario() -> tuple[Any, int]:
        async with mcp_client(disc.url, disc.token) as first, mcp_client(disc.url, disc.token) as second:
            waiting = [asyncio.ensure_future(first.call_tool("hang", {})) for _ in range(4)]
            await until(4)
            refused = await first.call_tool("hang", {})
            waiting.append(asyncio.ensure_future(second.call_tool("hang", {})))  # another session: room
            await until(5)
            count = in_flight()
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            return refused, count

    refused, count = asyncio.run(scenario())
    assert refused.is_error and "4 calls of this session are still waiting" in refused.content[0].text
    assert count == 5
