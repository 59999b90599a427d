"""The tool catalog: tools served by Python itself next to the tools registered in Lua.

Lua pushes its registry (names, descriptions, schemas) whenever it changes, so
`tools/list` never has to wait for Neovim. A Lua tool call is one gateway round trip.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from .gateway import NeovimCallError, NeovimUnavailable, NvimGateway

log = logging.getLogger(__name__)

# (arguments, the caller's MCP session id) -> a result (a CallToolResult or its wire dict)
NativeHandler = Callable[[dict[str, Any], str | None], Awaitable[Any]]

_CALL_LUA = "return require('gemini_companion.tools').call(...)"


@dataclass(frozen=True)
class NativeTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: NativeHandler
    annotations: types.ToolAnnotations | None = None


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def error_result(message: str) -> types.CallToolResult:
    return text_result(message, is_error=True)


def value_result(value: Any) -> types.CallToolResult:
    """A string becomes text; anything else becomes JSON text plus structuredContent (if an object)."""
    if isinstance(value, str):
        return text_result(value)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    structured = value if isinstance(value, dict) and value else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


class ToolCatalog:
    def __init__(self, gateway: NvimGateway) -> None:
        self._gateway = gateway
        self._native: dict[str, NativeTool] = {}
        self._lua: dict[str, types.Tool] = {}
        self._lua_timeouts: dict[str, float] = {}
        self.on_changed: list[Callable[[], None]] = []

    def add_native(self, tool: NativeTool) -> None:
        self._native[tool.name] = tool

    def set_lua_tools(self, specs: Any) -> None:
        """Replace the Lua tool list with what Lua pushed; malformed entries are skipped."""
        tools: dict[str, types.Tool] = {}
        timeouts: dict[str, float] = {}
        for spec in specs if isinstance(specs, list) else []:
            try:
                tool = types.Tool(
                    name=spec["name"],
                    description=spec.get("description") or None,
                    input_schema=_schema(spec.get("inputSchema")),
                    annotations=types.ToolAnnotations(read_only_hint=True) if spec.get("readOnly") else None,
                )
            except Exception:
                log.warning("skipping malformed Lua tool spec %r", spec)
                continue
            if tool.name in self._native:
                continue
            tools[tool.name] = tool
            timeout_ms = spec.get("timeout_ms")
            if isinstance(timeout_ms, int | float) and math.isfinite(timeout_ms) and timeout_ms > 0:
                timeouts[tool.name] = timeout_ms / 1000
        changed = [t.model_dump() for t in tools.values()] != [t.model_dump() for t in self._lua.values()]
        self._lua, self._lua_timeouts = tools, timeouts
        if changed:
            for callback in self.on_changed:
                callback()

    def __len__(self) -> int:
        return len(self._native) + len(self._lua)

    def list_tools(self) -> list[types.Tool]:
        native = [
            types.Tool(
                name=t.name, description=t.description, input_schema=t.input_schema, annotations=t.annotations
            )
            for t in self._native.values()
        ]
        return native + list(self._lua.values())

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, session_id: str | None = None
    ) -> Any:
        args = dict(arguments or {})
        native = self._native.get(name)
        if native is not None:
            return await native.handler(args, session_id)
        if name not in self._lua:
            return error_result(f"unknown tool {name!r}")
        try:
            reply = await self._gateway.exec_lua(
                _CALL_LUA, name, args, timeout_s=self._lua_timeouts.get(name), what=f"tool {name!r}"
            )
        except NeovimUnavailable as exc:
            return error_result(str(exc))
        except NeovimCallError as exc:
            return error_result(f"tool {name!r} failed: {exc}")
        return _lua_reply(name, reply)


def _schema(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) and raw.get("type") == "object":
        return raw
    return {"type": "object", "properties": {}}


def _lua_reply(name: str, reply: Any) -> types.CallToolResult:
    if not isinstance(reply, dict) or "ok" not in reply:
        return error_result(f"tool {name!r} returned an unexpected reply")
    if not reply["ok"]:
        return error_result(str(reply.get("error") or f"tool {name!r} failed"))
    try:
        return value_result(reply.get("result"))
    except (TypeError, ValueError) as exc:
        return error_result(f"tool {name!r} returned a value that is not JSON: {exc}")
