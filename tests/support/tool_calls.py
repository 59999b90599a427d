"""Several MCP tool calls in one session of the official Python SDK client."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.helpers import mcp_client


def call_tools(disc: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each call, in order, in one session."""

    async def go() -> list[tuple[bool, str]]:
        async with mcp_client(disc.url, disc.token) as client:
            out = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                out.append((bool(result.is_error), result.content[0].text if result.content else ""))
            return out

    return asyncio.run(go())
