"""What the server itself does with a tool call's arguments, before and after Lua (moved from
tests/integration/test_fuzz_tools.py, whose fuzzing of the real Lua tools, with Neovim's state
compared around each call, stays there): `arguments` that are not an object, the native tools'
own checks, and error messages that stay short whatever the argument."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.fake_neovim import FakeNeovim, FakeTool, InProcessServer, ToolFailure
from tests.support.fuzz_support import RawSession
from tests.support.helpers import mcp_client

# fuzz_echo as tools.lua lists it when registered with `args` (test_fuzz_tools.py's FUZZ_TOOLS).
ECHO_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer", "default": 1},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "mode": {"type": "string", "enum": ["a", "b", "c"]},
    },
    "required": ["text"],
    "additionalProperties": False,
}
BUFNR_SCHEMA = {
    "type": "object",
    "properties": {"bufnr": {"type": "integer"}},
    "additionalProperties": False,
}
PATH_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "additionalProperties": False,
}


def read_buffer(args: dict[str, Any]) -> Any:
    """A Lua tool whose own error quotes its argument whole (as `error('no file ' .. path)` would)."""
    raise ToolFailure(f"cannot read {args.get('path')}: no such file")


def add_tools(fake: FakeNeovim) -> None:
    fake.add_tool(
        FakeTool("fuzz_echo", lambda args: {"args": args, "keys": len(args)}, input_schema=ECHO_SCHEMA)
    )
    fake.add_tool(FakeTool("get_diagnostics", lambda _args: [], input_schema=BUFNR_SCHEMA))
    fake.add_tool(FakeTool("read_buffer", read_buffer, input_schema=PATH_SCHEMA))


def call(server: InProcessServer, tool: str, args: dict[str, Any]) -> Any:
    disc = server.discovery()

    async def go() -> Any:
        async with mcp_client(disc.url, disc.token) as client:
            return await client.call_tool(tool, args)

    return asyncio.run(go())


NON_OBJECTS = [[], [1, 2], "x", "{}", 5, 1.5, True, {"__proto__": {}}]
# Called with arguments by the server, never by this test: reviews, and calls that wait for an agent.
SKIPPED = {"openDiff", "closeDiff"}


def test_arguments_that_are_not_an_object(make_server: Any) -> None:
    """`arguments` as an array, a string, a number...: a JSON-RPC -32602 for the call, not a
    crash; null (= no arguments) is a normal call."""
    server: InProcessServer = make_server(setup=add_tools)
    raw = RawSession(server.discovery())
    try:
        listed = raw.request("tools/list", {}).json()["result"]["tools"]
        tools = sorted(t["name"] for t in listed if t["name"] not in SKIPPED)
        assert {"fuzz_echo", "nvim_info", "companion_status"} <= set(tools)
        for tool in tools:
            for arguments in NON_OBJECTS:
                answer = raw.request("tools/call", {"name": tool, "arguments": arguments})
                assert answer.status == 200, (tool, arguments, answer)
                value = answer.json()
                if isinstance(arguments, dict):
                    assert "result" in value, (tool, answer)
                else:
                    assert value["error"]["code"] == -32602, (tool, arguments, answer)
            answer = raw.request("tools/call", {"name": tool, "arguments": None})
            assert answer.status == 200 and "result" in answer.json(), (tool, answer)
    finally:
        raw.close()


def test_error_messages_stay_short_whatever_the_argument(make_server: Any) -> None:
    server: InProcessServer = make_server(setup=add_tools)
    huge = "h" * 1_000_000
    for tool, args in [
        ("get_diagnostics", {"bufnr": huge}),  # a schema violation
        ("fuzz_echo", {"text": "x", huge: 1}),  # an unknown key
        ("read_buffer", {"path": "/nonexistent/" + huge}),  # an error from the tool itself
    ]:
        result = call(server, tool, args)
        assert result.is_error
        assert len(result.content[0].text) < 1100, (tool, len(result.content[0].text))


def test_companion_status_checks_its_arguments_like_every_tool(server: InProcessServer) -> None:
    """Was bug H (fixed in 50ab291)."""
    result = call(server, "companion_status", {"unexpected": 1})
    assert result.is_error and "unexpected" in result.content[0].text
