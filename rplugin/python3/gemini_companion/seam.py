"""The seam between Python and Lua, Python's half: every Lua entry point Python calls, and every
event Lua sends. Lua's half is `lua/gemini_companion/bridge.lua`; docs/SEAM.md is the table of
both. tests/unit/test_seam.py fails when the two halves drift apart.

Imported lazily (by the edge once its service exists, and by the server thread): pydantic must
not load while Neovim waits for the host to start.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

log = logging.getLogger(__name__)

# -- Python -> Lua: code for nvim_exec_lua, `...` being the arguments ------------------------

_BRIDGE = "require('gemini_companion.bridge')"

HOST_HELLO = f"return {_BRIDGE}.host_hello(...)"  # (host channel id) -> HostHello
START_INFO = f"return {_BRIDGE}.start_info()"  # () -> StartInfo
ON_STATE = f"{_BRIDGE}.on_state(...)"  # (ServerLifecycle.snapshot())
ON_READY = f"{_BRIDGE}.on_ready(...)"  # (address, token, validated settings)
NOTIFY = f"{_BRIDGE}.notify(...)"  # (message, level)
CONFIGURE_TOOLS = f"{_BRIDGE}.configure_tools(...)"  # ({max_file_bytes, workspace limits})
CALL_TOOL = f"return {_BRIDGE}.call_tool(...)"  # (name, args, id[, channel]) -> ToolReply
CANCEL_TOOL = f"{_BRIDGE}.cancel_tool(...)"  # (call id, 'timeout'|'cancelled')
# (path, new content, proposal id, client name, channel to answer on or nil, expiry, whether the
# owner's answer carries a reason: else Lua types a rejection's comments into the agent) -> OpenedReview
OPEN_REVIEW = f"return {_BRIDGE}.open_review(...)"
CLOSE_REVIEW = f"return {_BRIDGE}.close_review(...)"  # (path, proposal id) -> ClosedReview
RELEASE_REVIEW = f"return {_BRIDGE}.release_review(...)"  # (path, why|nil): its session ended, or it withdrew
TURN_ENDED = f"{_BRIDGE}.turn_ended(...)"  # (agent title): a turn ended; what did it change unreviewed?
AGENT_TOOL = f"return {_BRIDGE}.agent_tool(...)"  # (agent, name, args) -> ClaudeToolError | any JSON value

LUA_ENTRY_POINTS = (
    HOST_HELLO,
    START_INFO,
    ON_STATE,
    ON_READY,
    NOTIFY,
    CONFIGURE_TOOLS,
    CALL_TOOL,
    CANCEL_TOOL,
    OPEN_REVIEW,
    CLOSE_REVIEW,
    RELEASE_REVIEW,
    TURN_ENDED,
    AGENT_TOOL,
)

# -- Lua's replies to them: what Python reads (Lua's mirror: lua/gemini_companion/types.lua) ----

_R = TypeVar("_R", bound="_Reply")


class _Reply(BaseModel):
    # Lax: Lua numbers arrive as int or float, and a field Lua adds later must not fail a reply.
    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def parse(cls: type[_R], raw: Any) -> _R:
        """Lua's reply, validated; a malformed one (logged) reads as the model's failure value."""
        try:
            return cls.model_validate(raw if isinstance(raw, dict) else {})
        except ValidationError as exc:
            log.warning("malformed %s from Lua: %s", cls.__name__, _short(exc))
            return cls.model_validate({})


class HostHello(_Reply):
    """Lua's answer when the host says hello: where to log, or why this host is refused."""

    refused: str | None = None  # not the host Lua started (Neovim's shared python3 host)
    log_dir: str = ""
    pid: int = 0  # Neovim's


class StartInfo(_Reply):
    """What the server needs from Neovim at start (gathered on Neovim's side, at once)."""

    config: dict[str, Any] | None = None  # the user's settings, validated by config.load_config
    cwd: str = ""
    pid: int = 0
    ppid: int = 0
    env: dict[str, Any] = Field(default_factory=dict)  # non-strings are dropped by the lifecycle
    tools: Any = None  # the Lua tool specs (the catalog checks each)
    state_dir: str = ""
    servername: str = ""

    @field_validator("config", "env", mode="before")
    @classmethod
    def _empty_table(cls, value: Any) -> Any:
        return {} if value == [] else value  # Lua's empty table crosses as an empty array


class OpenedReview(_Reply):
    ok: bool = False
    error: str | None = None


class ClosedReview(_Reply):
    found: bool = False  # Neovim still showed it
    content: str | None = None  # the proposal's text as the user left it


class ToolReply(_Reply):
    """A Lua tool's answer: `{pending}` (an asynchronous tool answers later, by ToolDone), or
    `{ok, text | json | error}`."""

    pending: bool = False
    ok: bool | None = None  # None: not a reply at all
    # Any: said as text whatever Lua put there (a number is not a reason to lose the answer).
    error: Any = None
    text: Any = None
    json_text: Any = Field(default=None, alias="json")  # a JSON document, as text


class ClaudeToolError(_Reply):
    """A Claude tool's failure; anything else it returns is the tool's JSON value."""

    error: str | None = None


# -- Lua -> Python ---------------------------------------------------------------------------

# to_host.call(action, ...) -> GeminiCompanionCall: the user's commands (plugin.py handles each).
COMMANDS = ("boot", "start", "stop", "restart", "opencode_register", "opencode_forget", "gate")
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
    """The editor context (open files, cursor, selection); `context.build_context` validates it."""

    type: Literal["context"]
    context: dict[str, Any]


class ReviewDecided(_Event):
    """The user accepted (`:w`, with the final text) or rejected (closed) a proposal."""

    type: Literal["review"]
    action: Literal["accepted", "rejected"]
    path: str
    id: int | None = None  # the proposal's id; absent for a view opened without one
    content: str | None = None  # accepted: the text the user wrote
    comments: str | None = None  # rejected: the user's comments on it, as one prompt


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


class AgentStarting(_Event):
    """An agent is being started beside Neovim (`:Gemini`): it connects in a moment, so the
    server loads what serves clients now rather than while the agent waits (`ServerInstance.wake`)."""

    type: Literal["agent_starting"]


Event = DirChanged | ToolsChanged | ContextChanged | ReviewDecided | ToolDone | AtMentioned | AgentStarting

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
