"""The tool catalog: tools served by Python itself next to the tools registered in Lua.

Lua pushes its registry (names, schemas, groups) whenever it changes, so `tools/list` never
waits for Neovim. A call is validated against the tool's schema here, before any Lua runs;
a synchronous tool answers in one gateway round trip, an asynchronous one first `{pending}`, then
its answer (a `seam.ToolDone` event). Both directions go through `bridge.lua` (docs/SEAM.md).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp_types as types

from ..config import ToolsConfig
from ..nvim.gateway import NeovimCallError, NeovimUnavailable, NvimGateway
from ..seam import CALL_TOOL, CANCEL_TOOL, ToolReply

log = logging.getLogger(__name__)

# (arguments, the caller's MCP session id) -> a result (a CallToolResult or its wire dict)
NativeHandler = Callable[[dict[str, Any], str | None], Awaitable[Any]]


@dataclass(frozen=True)
class NativeTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: NativeHandler
    annotations: types.ToolAnnotations | None = None


@dataclass(frozen=True)
class LuaTool:
    name: str  # as registered in Lua (the listed name may carry the configured prefix)
    tool: types.Tool
    validator: Any
    is_async: bool
    timeout_s: float | None


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


_MAX_ERROR = 1000  # a tool's own error may quote an argument (a 1 MB path): keep it a reason


def error_result(message: str) -> types.CallToolResult:
    if len(message) > _MAX_ERROR:
        message = message[:_MAX_ERROR] + f"… ({len(message)} characters)"
    return text_result(message, is_error=True)


def value_result(value: Any) -> types.CallToolResult:
    """A string becomes text; anything else becomes JSON text plus structuredContent (if an object)."""
    if isinstance(value, str):
        return text_result(value)
    return _json_result(json.dumps(value, ensure_ascii=False, allow_nan=False), value)


def _json_result(text: str, value: Any) -> types.CallToolResult:
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


_MAX_REASON = 300


def _argument_error(name: str, exc: jsonschema.ValidationError) -> types.CallToolResult:
    where = "/".join(str(p) for p in exc.absolute_path)[:100]
    field = f" at `{where}`" if where else ""
    reason = exc.message  # quotes the offending value: a huge argument must not come back whole
    if len(reason) > _MAX_REASON:
        reason = reason[:_MAX_REASON] + f"… ({len(exc.message)} characters)"
    return error_result(f"invalid arguments for {name!r}{field}: {reason}")


# Neovim's msgpack-RPC parser closes the channel on a message nested ~30 levels deep (the call
# itself adds 4), so deeper arguments must never reach it; and a 10 MB body of small values would
# become millions of Lua values at once. Real tools take a few levels and a few thousand values.
MAX_ARGUMENT_DEPTH = 16
MAX_ARGUMENT_VALUES = 100_000


def _shape_problem(args: dict[str, Any]) -> str | None:
    """Why `args` cannot be passed to Neovim (too deep, too many values), or None."""
    stack: list[tuple[Any, int]] = [(args, 1)]
    values = 0
    while stack:
        value, depth = stack.pop()
        values += 1
        if values > MAX_ARGUMENT_VALUES:
            return f"more than {MAX_ARGUMENT_VALUES} values in all"
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= MAX_ARGUMENT_DEPTH and children:
            return f"nested more than {MAX_ARGUMENT_DEPTH} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def _first_error(validator: Any, args: dict[str, Any]) -> jsonschema.ValidationError | None:
    return next(iter(sorted(validator.iter_errors(args), key=lambda e: list(e.path))), None)


def _validator(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


class ToolCatalog:
    def __init__(
        self,
        gateway: NvimGateway,
        config: ToolsConfig | None = None,
        timeout_s: float = 5.0,
        *,
        max_pending_per_session: int = 64,
    ) -> None:
        self._gateway = gateway
        # Asynchronous calls waiting for their answer, per session: once Lua answered "pending"
        # they no longer count for the gateway's max_in_flight, so bound them here.
        self._max_pending = max_pending_per_session
        self._pending_per_session: collections.Counter[str | None] = collections.Counter()
        self._config = config or ToolsConfig()
        self._timeout_s = timeout_s
        self._native: dict[str, NativeTool] = {}
        self._native_validators: dict[str, Any] = {}
        self._lua: dict[str, LuaTool] = {}  # by listed name
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.on_changed: list[Callable[[], None]] = []

    def add_native(self, tool: NativeTool) -> None:
        self._native[tool.name] = tool
        self._native_validators[tool.name] = _validator(tool.input_schema)

    def _group_enabled(self, group: str) -> bool:
        enabled = getattr(self._config.groups, group, True)  # user tools: always
        return bool(enabled)

    def set_lua_tools(self, specs: Any) -> None:
        """Replace the Lua tool list with what Lua pushed; malformed entries are skipped."""
        tools: dict[str, LuaTool] = {}
        for spec in specs if isinstance(specs, list) else []:
            try:
                entry = self._lua_tool(spec)
            except Exception as exc:
                log.warning(
                    "skipping Lua tool %r: %s", spec.get("name") if isinstance(spec, dict) else spec, exc
                )
                continue
            if entry is not None and entry.tool.name not in self._native:
                tools[entry.tool.name] = entry
        changed = [t.tool.model_dump() for t in tools.values()] != [
            t.tool.model_dump() for t in self._lua.values()
        ]
        self._lua = tools
        if changed:
            for callback in self.on_changed:
                callback()

    def _lua_tool(self, spec: dict[str, Any]) -> LuaTool | None:
        group = str(spec.get("group") or "user")
        if not self._group_enabled(group):
            return None
        schema = spec.get("inputSchema")
        if not (isinstance(schema, dict) and schema.get("type") == "object"):
            raise ValueError("inputSchema must be an object schema")
        if schema.get("properties") == []:  # Lua's empty table
            schema = {**schema, "properties": {}}
        validator = _validator(schema)
        name = str(spec["name"])
        timeout_ms = spec.get("timeout_ms")
        timeout = (
            timeout_ms / 1000
            if isinstance(timeout_ms, int | float) and math.isfinite(timeout_ms) and timeout_ms > 0
            else None
        )
        tool = types.Tool(
            name=self._config.prefix + name,
            description=spec.get("description") or None,
            input_schema=schema,
            annotations=types.ToolAnnotations(read_only_hint=True) if spec.get("readOnly") else None,
        )
        return LuaTool(name, tool, validator, bool(spec.get("async")), timeout)

    def __len__(self) -> int:
        return len(self._native) + len(self._lua)

    def list_tools(self) -> list[types.Tool]:
        native = [
            types.Tool(
                name=t.name, description=t.description, input_schema=t.input_schema, annotations=t.annotations
            )
            for t in self._native.values()
        ]
        return native + [t.tool for t in self._lua.values()]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, session_id: str | None = None
    ) -> Any:
        args = dict(arguments or {})
        shape = _shape_problem(args)
        if shape is not None:
            return error_result(f"invalid arguments for {name[:100]!r}: {shape}; nothing was run")
        native = self._native.get(name)
        if native is not None:
            error = _first_error(self._native_validators[name], args)
            if error is not None:
                return _argument_error(name, error)
            return await native.handler(args, session_id)
        lua = self._lua.get(name)
        if lua is None:
            return error_result(f"unknown tool {name[:100]!r}")
        error = _first_error(lua.validator, args)
        if error is not None:
            return _argument_error(name, error)
        _apply_defaults(lua.tool.input_schema, args)
        if not lua.is_async:
            return await self._call_lua(lua, args)
        if self._pending_per_session[session_id] >= self._max_pending:
            return error_result(
                f"{self._max_pending} calls of this session are still waiting for asynchronous tools "
                f"(max_in_flight); {lua.name!r} was not run: wait for them or cancel some"
            )
        self._pending_per_session[session_id] += 1
        try:
            return await self._call_lua(lua, args)
        finally:
            self._pending_per_session[session_id] -= 1
            if not self._pending_per_session[session_id]:
                del self._pending_per_session[session_id]

    async def _call_lua(self, lua: LuaTool, args: dict[str, Any]) -> types.CallToolResult:
        timeout = lua.timeout_s or self._timeout_s
        call_id = next(self._ids)
        waiter: asyncio.Future[Any] | None = None
        if lua.is_async:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting[call_id] = waiter
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            # An asynchronous tool answers on the channel its call came on (ours, when we have one).
            reply_to = await self._gateway.reply_channel() if waiter is not None else None
            reply = ToolReply.parse(
                await self._gateway.exec_lua(
                    CALL_TOOL,
                    *(lua.name, args, call_id) + ((reply_to,) if reply_to is not None else ()),
                    timeout_s=timeout,
                    what=f"tool {lua.name!r}",
                )
            )
            if reply.pending and waiter is not None:
                remaining = max(0.0, timeout - (loop.time() - started))
                try:
                    reply = ToolReply.parse(await asyncio.wait_for(waiter, remaining))
                except (TimeoutError, asyncio.TimeoutError):
                    self._gateway.notify_lua(CANCEL_TOOL, call_id, "timeout")
                    return error_result(f"tool {lua.name!r} did not answer within {timeout:g} s")
        except asyncio.CancelledError:
            # The client cancelled (notifications/cancelled): the Lua side stops listening too.
            if waiter is not None:
                self._gateway.notify_lua(CANCEL_TOOL, call_id, "cancelled")
            raise
        except NeovimUnavailable as exc:
            return error_result(str(exc))
        except NeovimCallError as exc:
            return error_result(f"tool {lua.name!r} failed: {exc}")
        finally:
            self._waiting.pop(call_id, None)
        return _lua_reply(lua.name, reply)

    def complete(self, call_id: int, reply: dict[str, Any]) -> None:
        """An asynchronous Lua tool called `done` (a `seam.ToolDone` event)."""
        waiter = self._waiting.pop(call_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)


def _apply_defaults(schema: Mapping[str, Any], args: dict[str, Any]) -> None:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, prop in properties.items():
            if key not in args and isinstance(prop, dict) and "default" in prop:
                args[key] = prop["default"]


def _lua_reply(name: str, reply: ToolReply) -> types.CallToolResult:
    if reply.ok is None:
        return error_result(f"tool {name!r} returned an unexpected reply")
    if not reply.ok:
        return error_result(str(reply.error or f"tool {name!r} failed"))
    if reply.text is not None:
        return text_result(str(reply.text))
    text = "null" if reply.json_text is None else str(reply.json_text)
    try:
        value = json.loads(text)
    except ValueError:
        return error_result(f"tool {name!r} returned a value that is not JSON")
    return _json_result(text, value)
