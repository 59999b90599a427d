"""Who may get in: DNS rebinding, browsers, CORS, other local users, and where the token may appear."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.helpers import Neovim, initialize_body, mcp_client, record_figure, wait_for
from tests.support.tool_calls import call_tools

INIT = initialize_body("sec")
# `make stress` (STRESS=1): the hostile inputs at full size (bench/reliability.md).
STRESS = os.environ.get("STRESS") == "1"
OTHER_UID = 65534  # nobody: the other local user


def as_other_user(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `cmd` as another local user (needs root and setpriv, as on CI)."""
    setpriv = shutil.which("setpriv")
    if (
        setpriv is None
        or subprocess.run(["id", "-u"], check=False, capture_output=True, text=True).stdout.strip() != "0"
    ):
        pytest.fail("this test needs root and setpriv (util-linux) to act as another user")
    return subprocess.run(
        [setpriv, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *map(str, cmd)],
        check=False,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory like /tmp (mode 1777, reachable by every user) to be Neovim's TMPDIR."""
    path = Path(tempfile.mkdtemp(prefix="gemini-companion-shared-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def told(nvim: Neovim, text: str) -> bool:
    return any(text in str(note[0]) for note in nvim.notifications())


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


def test_dns_rebinding_browsers_and_cors(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
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


def test_other_users_cannot_read_the_secrets(make_nvim) -> None:  # type: ignore[no-untyped-def]
    setpriv = shutil.which("setpriv")
    if (
        setpriv is None
        or subprocess.run(["id", "-u"], check=False, capture_output=True, text=True).stdout.strip() != "0"
    ):
        pytest.fail("this test needs root and setpriv (util-linux) to act as another user")
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ token_file = true })")
    disc = nvim.wait_discovery()
    token_file = nvim.state / "nvim" / "gemini_companion" / "token"
    for d in (nvim.base, nvim.tmpdir, nvim.state, nvim.state / "nvim"):
        d.chmod(0o755)  # pytest's tmp dirs are private already; open them so only our modes matter
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


def test_the_token_stays_out_of_logs_status_errors_and_configs(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")

    async def failing_calls() -> list[str]:
        texts = []
        async with aiohttp.ClientSession() as http:
            for headers in (
                {"Authorization": f"Bearer {disc.token}x"},
                {"Authorization": disc.token},
                {"Authorization": f"Bearer {disc.token}", "Origin": "null"},
            ):
                async with http.post(disc.url, data=INIT, headers=headers) as resp:
                    texts.append(await resp.text())
        return texts

    texts = asyncio.run(failing_calls())
    nvim.api.command("GeminiMcpConfig claude")
    nvim.api.command("GeminiStatus")
    shown = "\n".join(nvim.api.current.buffer[:])
    everything = "\n".join(texts) + shown + json.dumps(nvim.notifications()) + nvim.log_text()
    everything += json.dumps(nvim.server_state())
    assert disc.token not in everything
    wait_for(lambda: "listening on" in nvim.log_text(), what="log written")


def test_unreadable_bodies_and_malformed_requests(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
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
    assert disc.token not in nvim.log_text()


def test_connections_past_the_cap_are_refused_and_service_returns(nvim: Neovim) -> None:
    # Even clients that showed the token cannot make the host run out of file descriptors: past
    # the cap, a newcomer gets a 503 when no connection is left that never authenticated.
    disc = nvim.wait_discovery()
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
        assert nvim.wait_state("running")["client_count"] == 0  # the host is fine meanwhile
    finally:
        for sock in held:
            sock.close()
    _, text = wait_for(
        lambda: (answer := post(disc.port, disc.token, f"127.0.0.1:{disc.port}"))[0] == 200 and answer,
        what="service back once the connections closed",
    )
    assert '"serverInfo"' in text
    assert nvim.log_text().count("refusing new ones") == 1  # once per burst, not once per socket


def test_a_discovery_directory_made_by_another_user_is_refused(make_nvim, shared_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    # Another user creates $TMPDIR/gemini (0777) before us, to read the token we would put there.
    assert as_other_user("mkdir", "-m", "0777", shared_tmp / "gemini").returncode == 0
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    state = nvim.wait_state("running")
    error = state.get("discovery_error", "")
    assert f"refusing the discovery directory {shared_tmp / 'gemini'}" in error, state
    assert f"belongs to uid {OTHER_UID}" in error and "set $TMPDIR to a private directory" in error
    wait_for(lambda: told(nvim, "refusing the discovery directory"), what="the user told")
    assert not list((shared_tmp / "gemini").rglob("*.json"))  # nothing written in their directory
    token = nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN")
    assert token and as_other_user("grep", "-rl", "-e", token, shared_tmp).returncode == 1  # found nowhere
    lines = "\n".join(nvim.lua("return require('gemini_companion.status').lines()"))
    assert "not written: refusing the discovery directory" in lines
    health = nvim.health()
    assert f"{shared_tmp / 'gemini'} belongs to uid {OTHER_UID}: the server refuses" in health
    assert "is writable" not in health


def test_a_loose_directory_of_ours_is_made_private_and_theirs_inside_is_refused(
    make_nvim, shared_tmp: Path
) -> None:  # type: ignore[no-untyped-def]
    gemini = shared_tmp / "gemini"
    gemini.mkdir()
    gemini.chmod(0o777)  # ours, but anyone may add, rename or remove entries
    assert as_other_user("mkdir", "-m", "0777", gemini / "ide").returncode == 0  # and they did
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    error = nvim.wait_state("running").get("discovery_error", "")
    assert f"refusing the discovery directory {gemini / 'ide'}" in error and f"uid {OTHER_UID}" in error
    assert gemini.stat().st_mode & 0o777 == 0o700  # repaired: ours
    assert not list((gemini / "ide").iterdir())
    (gemini / "ide").rmdir()
    nvim.api.command("GeminiRestart")
    disc = nvim.wait_discovery()
    assert disc.path.parent == gemini / "ide" and disc.path.stat().st_mode & 0o777 == 0o600
    # Now they can neither swap the directory for theirs nor read the token.
    moved = as_other_user("mv", gemini / "ide", shared_tmp / "stolen")
    assert moved.returncode != 0 and "Permission denied" in moved.stderr
    assert as_other_user("grep", "-rl", "-e", disc.token, shared_tmp).returncode != 0
    assert not [p.name for p in (gemini / "ide").iterdir() if p.name.endswith(".tmp")]


def test_a_symlinked_discovery_directory_is_refused_also_at_cd(make_nvim, shared_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    theirs = shared_tmp / "theirs"
    assert as_other_user("mkdir", "-m", "0777", theirs).returncode == 0
    assert as_other_user("ln", "-s", theirs, shared_tmp / "gemini").returncode == 0
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    error = nvim.wait_state("running").get("discovery_error", "")
    assert f"refusing the discovery directory {shared_tmp / 'gemini'}: it is a symbolic link" in error
    assert not list(theirs.rglob("*"))  # nothing created through the link
    health = nvim.health()
    assert f"{shared_tmp / 'gemini'} is a symbolic link: the server refuses" in health
    assert "is writable" not in health
    (shared_tmp / "gemini").unlink()
    nvim.api.command("GeminiRestart")
    disc = nvim.wait_discovery()
    # The directory is swapped for a link while we run (as by someone who could, before we made
    # it private); the next :cd rewrites the file and must not follow it.
    ide = disc.path.parent
    ide.rename(ide.with_name("old"))
    ide.symlink_to(theirs)
    (nvim.workspace / "sub").mkdir()
    nvim.api.command("cd sub")
    wait_for(
        lambda: told(nvim, f"refusing the discovery directory {ide}: it is a symbolic link"), what="told"
    )
    assert not list(theirs.rglob("*"))
    # The state push that carries the error is coalesced (50 ms): wait for it, do not race it.
    wait_for(
        lambda: "symbolic link" in nvim.server_state().get("discovery_error", ""), what="state has the error"
    )


TAKES_ANYTHING = """
require('gemini_companion').register({ name = 'take',
  schema = { type = 'object', properties = { value = { description = 'anything' } } },
  execute = function() _G.__took = (_G.__took or 0) + 1 return 'took it' end })
"""


def nested(depth: int) -> object:
    value: object = 1
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def test_too_deep_or_too_large_arguments_never_reach_neovim(make_nvim) -> None:  # type: ignore[no-untyped-def]
    # Neovim's RPC parser closes a channel that carries a message nested ~30 deep; on the host's
    # own channel that drops the host. Such arguments are refused before any call into Neovim.
    nvim: Neovim = make_nvim(init_lua=TAKES_ANYTHING)
    disc = nvim.wait_discovery()
    nvim.wait_state("running")

    depths = range(17, 121) if STRESS else (30, 100, 40, 30)  # the SDK's parser stops ~128

    async def scenario() -> tuple[Any, list[Any], Any, Any, Any]:
        async with mcp_client(disc.url, disc.token) as client:
            fine = await client.call_tool("take", {"value": nested(12)})
            deep = [await client.call_tool("take", {"value": nested(d)}) for d in depths]
            wide = await client.call_tool("take", {"value": [0] * 200_000})
            info = await client.call_tool("nvim_info", {})
            status = await client.call_tool("companion_status", {})
            return fine, deep, wide, info, status

    fine, deep, wide, info, status = asyncio.run(scenario())
    assert not fine.is_error and fine.content[0].text == "took it"
    for result in deep:
        text = result.content[0].text
        assert result.is_error and "nested more than 16 levels deep; nothing was run" in text, text
    assert wide.is_error and "more than 100000 values" in wide.content[0].text
    assert nvim.lua("return _G.__took") == 1  # the refused ones never ran
    assert not info.is_error and status.structured_content["direct_channel"] is True
    assert nvim.lua("return require('gemini_companion').statusline()").startswith("Gemini ●")
    record_figure("hostile.arguments", inputs=len(deep) + 1, failures=0, deepest=max(depths))


def test_a_channel_neovim_closed_is_reopened_not_replaced_by_the_hosts_own(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    # Neovim closes the server's own channel (as it does after a message it cannot parse).
    closed = nvim.lua(
        """local mine, n = ..., 0
        for _, c in ipairs(vim.api.nvim_list_chans()) do
          if c.stream == 'socket' and c.id ~= mine then vim.fn.chanclose(c.id) n = n + 1 end
        end
        return n""",
        nvim.api.channel_id,
    )
    assert closed == 1

    async def scenario() -> tuple[Any, Any]:
        async with mcp_client(disc.url, disc.token) as client:
            return await client.call_tool("nvim_info", {}), await client.call_tool("companion_status", {})

    info, status = asyncio.run(scenario())
    assert not info.is_error
    # Tool traffic stays off the host's stdio channel: a fresh direct channel carried the call.
    assert status.structured_content["direct_channel"] is True
    assert "reconnected to Neovim" in nvim.log_text()


def test_files_that_would_hang_or_exhaust_neovim_are_refused(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ max_file_bytes = 1024 * 1024 })")
    disc = nvim.wait_discovery()
    big = nvim.workspace / "big.txt"
    big.write_bytes(b"x" * 99 + b"\n" * 1 + (b"y" * 99 + b"\n") * 20_000)  # 2 MB, over the 1 MiB cap
    (nvim.workspace / "status.txt").symlink_to("/proc/self/status")
    # A pipe of Neovim's own, as Neovim names it; far up the fd table, so that the host (where
    # openDiff used to check the path) has nothing there and would have let it through.
    pipe_fd = nvim.lua(
        """_G.__held = {}
        for _ = 1, 300 do table.insert(_G.__held, vim.uv.fs_open('/dev/null', 'r', 0)) end
        _G.__pipe = vim.uv.pipe({ nonblock = false }, { nonblock = false })
        return _G.__pipe.read"""
    )
    assert not os.path.exists(f"/proc/{disc.data['hostPid']}/fd/{pipe_fd}")
    results = call_tools(
        disc,
        [
            ("read_buffer", {"path": str(big)}),
            ("openDiff", {"filePath": str(big), "newContent": "new\n"}),
            ("lsp_document_symbols", {"path": str(big)}),
            ("read_buffer", {"path": str(nvim.workspace / "status.txt")}),
            ("read_buffer", {"path": "/proc/self/status"}),
            ("openDiff", {"filePath": f"/proc/self/fd/{pipe_fd}", "newContent": "x"}),
            ("read_buffer", {"path": f"/proc/self/fd/{pipe_fd}"}),
            ("read_buffer", {"path": "/proc/self/pagemap"}),
            ("read_buffer", {"path": "/dev/zero"}),
            ("lsp_document_symbols", {"path": "/proc/self/pagemap"}),
            ("nvim_info", {}),
        ],
    )
    expected = [
        "too large (2000100 bytes; max_file_bytes = 1048576)",
        "too large",
        "too large",
        "leads into /proc",
        "is in /proc",
        "is in /proc",
        "is in /proc",
        "is in /proc",
        "is in /dev",
        "is in /proc",
    ]
    for (is_error, text), reason in zip(results, expected, strict=False):
        assert is_error and reason in text, (reason, text)
    assert not results[-1][0]  # Neovim never hung
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1  # no review opened
    assert nvim.lua("return vim.fn.bufnr(...)", str(big)) == -1  # nothing loaded


def test_path_tools_can_be_kept_inside_the_workspace(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({ tools = { restrict_to_workspace = true } })"
    )
    disc = nvim.wait_discovery()
    (nvim.workspace / "inside.txt").write_text("hello\n")
    (nvim.workspace / "link.txt").symlink_to(outside)
    results = call_tools(
        disc,
        [
            ("read_buffer", {"path": "inside.txt"}),
            ("read_buffer", {"path": str(outside)}),
            ("read_buffer", {"path": "../../outside.txt"}),
            ("read_buffer", {"path": str(nvim.workspace / "link.txt")}),
            ("lsp_document_symbols", {"path": str(outside)}),
        ],
    )
    assert results[0] == (False, results[0][1]) and '"hello"' in results[0][1]
    for is_error, text in results[1:]:
        assert is_error and "outside the workspace" in text and "restrict_to_workspace" in text, text
    assert "secret" not in json.dumps(results)
    assert not any("invalid settings" in str(n[0]) for n in nvim.notifications())


HANGS = """
require('gemini_companion').register({ name = 'hang', timeout_ms = 10000,
  execute = function(_, done, ctx) ctx.on_cancel(function(reason) _G.__cancelled = reason end) end })
"""


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


def test_idle_sockets_of_anyone_cannot_lock_clients_out(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
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


def test_a_connection_that_brings_no_whole_request_is_dropped(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
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


def test_a_client_gone_mid_call_cancels_the_call_in_neovim(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=HANGS)
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
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
    tools = "return require('gemini_companion.tools').in_flight()"
    wait_for(lambda: nvim.lua(tools) == 1, what="the call running in Lua")
    sock.close()  # the client goes away without waiting for the answer
    assert wait_for(lambda: nvim.lua("return _G.__cancelled"), what="the tool told") == "cancelled"
    assert nvim.lua(tools) == 0


def test_pending_asynchronous_calls_are_bounded_per_session(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=HANGS + "vim.g.gemini_companion = { max_in_flight = 4 }")
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    in_flight = "return require('gemini_companion.tools').in_flight()"

    async def until(count: int) -> None:
        # pynvim runs its own event loop: ask Neovim from a thread
        await asyncio.to_thread(wait_for, lambda: nvim.lua(in_flight) >= count, what=f"{count} calls in Lua")

    async def scenario() -> tuple[Any, int]:
        async with mcp_client(disc.url, disc.token) as first, mcp_client(disc.url, disc.token) as second:
            waiting = [asyncio.ensure_future(first.call_tool("hang", {})) for _ in range(4)]
            await until(4)
            refused = await first.call_tool("hang", {})
            waiting.append(asyncio.ensure_future(second.call_tool("hang", {})))  # another session: room
            await until(5)
            count = await asyncio.to_thread(nvim.lua, in_flight)
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            return refused, count

    refused, count = asyncio.run(scenario())
    assert refused.is_error and "4 calls of this session are still waiting" in refused.content[0].text
    assert count == 5


def test_a_read_stops_at_the_limit_whatever_size_the_file_claims(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ max_file_bytes = 65536 })")
    nvim.wait_state("running")
    grown = nvim.workspace / "grown.log"
    grown.write_bytes(b"line\n" * 40_000)  # 200 KB
    error = nvim.lua(
        """local util = require('gemini_companion.builtin.util')
        local check = util.check_file
        util.check_file = function() end -- as if stat had said "small" (/proc files say 0 bytes)
        local ok, err = pcall(util.read_file, ...)
        -- The same read off the main loop (a big review's file) stops there too.
        local async_err
        util.read_file_async(..., function(text, why)
          async_err = text and 'read ' .. #text .. ' bytes' or why
        end)
        vim.wait(5000, function()
          return async_err ~= nil
        end)
        util.check_file = check
        return not ok and { err, async_err }""",
        str(grown),
    )
    assert error == [f"{grown} is too large (more than 65536 bytes; max_file_bytes = 65536)"] * 2
