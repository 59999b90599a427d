"""The server's first answers to real MCP clients and to requests without the right credentials
(moved from tests/integration/test_server.py, whose other tests are the host's life with Neovim:
starting, stopping, quitting, being killed, what :checkhealth and :GeminiStatus show)."""

from __future__ import annotations

import asyncio
import json

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import initialize_body, mcp_client, raw_request


def test_python_sdk_client_lists_and_calls_tools(server: InProcessServer) -> None:
    disc = server.discovery()

    async def scenario(mode: str) -> None:
        async with mcp_client(disc.url, disc.token, mode=mode) as client:
            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            assert {"nvim_info", "companion_status"} <= names
            result = await client.call_tool("nvim_info", {})
            assert not result.is_error
            info = json.loads(result.content[0].text)
            assert info["cwd"] == str(server.fake.workspace)
            assert info["pid"] == server.fake.pid
            assert result.structured_content == info
            missing = await client.call_tool("no_such_tool", {})
            assert missing.is_error and "unknown tool" in missing.content[0].text

    asyncio.run(scenario("legacy"))
    # An mcp 2.x client in its default `auto` mode probes the stateless era first; it must
    # end up on the handshake era (with sessions) and work the same.
    asyncio.run(scenario("auto"))


INIT = initialize_body("raw")


def test_requests_without_the_right_credentials_or_from_browsers_are_refused(server: InProcessServer) -> None:
    disc = server.discovery()
    good = {
        "Authorization": f"Bearer {disc.token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def check(headers: dict[str, str], method: str = "POST", data: bytes | None = INIT) -> int:
        status, _ = asyncio.run(raw_request(disc.port, method, headers, data))
        return status

    assert check({k: v for k, v in good.items() if k != "Authorization"}) == 401
    assert check({**good, "Authorization": "Bearer wrong"}) == 401
    assert check({**good, "Authorization": disc.token}) == 401  # no scheme
    assert check({**good, "Authorization": f"Basic {disc.token}"}) == 401
    assert check({**good, "Authorization": f"Bearer {disc.token}x"}) == 401
    assert check({**good, "Origin": "http://127.0.0.1"}) == 403
    assert check({**good, "Origin": "null"}) == 403
    assert check({**good, "Origin": "https://evil.example"}, method="OPTIONS", data=None) == 403
    assert check({**good, "Host": "evil.example"}) == 403
    assert check({**good, "Host": f"localhost.attacker.example:{disc.port}"}) == 403
    assert check({**good, "Host": f"127.0.0.1:{disc.port + 1}"}) == 403
    assert check({**good, "Host": f"localhost:{disc.port}"}) == 200
    assert check(good) == 200
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (25 * 1024 * 1024) + b'"}}'
    assert check(good, data=big) == 413
    assert check(good) == 200  # and the server is fine after all that
    assert disc.token not in server.log_text()
