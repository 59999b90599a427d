"""The seam between Python and Lua, Python's half: every Lua entry point Python calls, and every
event Lua sends. Lua's half is `lua/gemini_companion/bridge.lua`; docs/SEAM.md is the table of
both. tests/unit/test_seam.py fails when the two halves drift apart.

Imported lazily (by the edge once its service exists, and by the server thread): pydantic must
not load while Neovim waits for the host to start.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

log = logging.getLogger(__name__)

# -- Python -> Lua: code for nvim_exec_lua, `...` being the arguments ------------------------

_BRIDGE = "require('gemini_companion.bridge')"

HOST_HELLO = f"return {_BRIDGE}.host_hello(...)"  # (host channel id) -> {log_dir, pid}
START_INFO = f"return {_BRIDGE}.start_info()"  # () -> what the server needs from Neovim
ON_STATE = f"{_BRIDGE}.on_state(...)"  # (ServerLifecycle.snapshot())
ON_READY = f"{_BRIDGE}.on_ready(...)"  # (address, token, validated settings)
NOTIFY = f"{_BRIDGE}.notify(...)"  # (message, level)
CONFIGURE_TOOLS = f"{_BRIDGE}.configure_tools(...)"  # ({max_file_bytes, workspace limits})
CALL_TOOL = f"return {_BRIDGE}.call_tool(...)"  # (name, args, id[, channel]) -> reply | {pending}
CANCEL_TOOL = f"{_BRIDGE}.cancel_tool(...)"  # (call id, 'timeout'|'cancelled')
OPEN_DIFF = f"return {_BRIDGE}.open_diff(...)"  # (path, new content, proposal id, client name) -> {ok, error}
CLOSE_DIFF = f"return {_BRIDGE}.close_diff(...)"  # (path, proposal id) -> {content}
RELEASE_DIFF = f"return {_BRIDGE}.release_diff(...)"  # (path, why|nil): its session ended, or it withdrew
CLAUDE_TOOL = f"return {_BRIDGE}.claude_tool(...)"  # (name, args) -> JSON value | {error}

LUA_ENTRY_POINTS = (
    HOST_HELLO,
    START_INFO,
    ON_STATE,
    ON_READY,
    NOTIFY,
    CONFIGURE_TOOLS,
    CALL_TOOL,
    CANCEL_TOOL,
    OPEN_DIFF,
    CLOSE_DIFF,
    RELEASE_DIFF,
    CLAUDE_TOOL,
)

# -- Lua -> Python ---------------------------------------------------------------------------

# bridge.call(action, ...) -> GeminiCompanionCall: the user's commands (plugin.py handles each).
COMMANDS = ("boot", "start", "stop", "restart", "opencode_register", "opencode_forget")
# rpcnotify(host, EVENT_METHOD, event): an `Event` below. The names are pynvim exports in plugin.py.
EVENT_METHOD = "gemini_companion_event"
SHUTDOWN_METHOD = "gemini_companion_shutdown"  # rpcrequest on VimLeavePre: stop, bounded


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class DirChanged(_Event):
    """The global working directory changed (`:cd`)."""

    type: Literal["dirchanged"]
    cwd: str


class ToolsChanged(_Event):
    """The Lua tool registry changed: the full list of specs (each checked by the catalog, which
    skips a malformed one rather than all of them)."""

    type: Literal["tools"]
    tools: list[Any]


class ContextChanged(_Event):
    """The editor context (open files, cursor, selection); `ide.build_context` validates it."""

    type: Literal["context"]
    context: dict[str, Any]


class DiffDecided(_Event):
    """The user accepted (`:w`, with the final text) or rejected (closed) a proposal."""

    type: Literal["diff"]
    action: Literal["accepted", "rejected"]
    path: str
    id: int | None = None  # the proposal's id; absent for a view opened without one
    content: str | None = None  # accepted: the text the user wrote


class ToolDone(_Event):
    """An asynchronous Lua tool answered call `id` (its first answer came back `{pending}`)."""

    type: Literal["tool_done"]
    id: int
    reply: dict[str, Any]


class AtMentioned(_Event):
    """`mention.at_mentioned`: put `@file#Lx-y` into Claude Code's prompt (lines 0-based)."""

    type: Literal["at_mentioned"]
    path: str
    line_start: int | None = None
    line_end: int | None = None


Event = DirChanged | ToolsChanged | ContextChanged | DiffDecided | ToolDone | AtMentioned

_EVENT: TypeAdapter[Event] = TypeAdapter(Annotated[Event, Field(discriminator="type")])


def parse_event(raw: Any) -> Event | None:
    """The event Lua sent, validated; None (logged) when it is not one Python knows."""
    try:
        return _EVENT.validate_python(raw)
    except ValidationError as exc:
        kind = raw.get("type") if isinstance(raw, dict) else type(raw).__name__
        log.warning("dropped a malformed event from Lua (%r): %s", kind, _short(exc))
        return None


def _short(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
