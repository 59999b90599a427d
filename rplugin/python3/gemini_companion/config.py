"""User configuration: validated with pydantic, bad fields fall back to their defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MiB = 1024 * 1024


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ContextConfig(_Section):
    """What Gemini CLI is told about the editor (`ide/contextUpdate`)."""

    enabled: bool = True
    debounce_ms: int = Field(default=50, ge=0, le=5000)
    selection_demotion_ms: int = Field(default=50, ge=0, le=5000)
    max_files: int = Field(default=10, ge=1, le=10)
    is_trusted: bool | None = None  # omitted from updates unless set


class DiffKeymaps(_Section):
    accept: str | Literal[False] = False
    reject: str | Literal[False] = False


class DiffConfig(_Section):
    """How proposed edits (`openDiff`) are shown."""

    layout: Literal["vertical", "horizontal"] = "vertical"  # the two sides side by side, or stacked
    new_tab: bool = True  # False: open in the current tab
    focus: bool = True  # jump to the diff (False: stay where you are, e.g. in the terminal)
    keymaps: DiffKeymaps = Field(default_factory=DiffKeymaps)
    # Proposals waiting for your decision, per MCP session and all together; past a limit
    # openDiff is refused with an error naming the setting.
    max_pending_per_session: int = Field(default=8, ge=1, le=1000)
    max_pending: int = Field(default=32, ge=1, le=10_000)
    max_pending_bytes_per_session: int = Field(default=64 * MiB, ge=MiB, le=16 * 1024 * MiB)
    max_pending_bytes: int = Field(default=256 * MiB, ge=MiB, le=16 * 1024 * MiB)


class ToolGroups(_Section):
    """Built-in tool groups; each can be switched off. User-registered tools are always listed."""

    buffers: bool = True
    editor: bool = True
    diagnostics: bool = True
    lsp: bool = True
    undo: bool = True
    dap: bool = True
    test: bool = False


class ToolsConfig(_Section):
    prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_.-]{0,32}$")  # e.g. "nvim_"
    groups: ToolGroups = Field(default_factory=ToolGroups)


class IntegrationsConfig(_Section):
    opencode: bool = False  # follow sudo-tee/opencode.nvim's server and register with it
    opencode_url: str = Field(default="http://127.0.0.1:4096", pattern=r"^https?://")
    opencode_name: str = Field(default="nvim", pattern=r"^[A-Za-z0-9_-]{1,64}$")


class CompanionConfig(BaseModel):
    """Settings from `require('gemini_companion').setup({...})` and/or `vim.g.gemini_companion`."""

    # strict: a Lua string where a number belongs is reported, not silently coerced.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    auto_start: bool = True
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    tool_timeout_ms: int = Field(default=5000, ge=100, le=3_600_000)
    max_body_bytes: int = Field(default=10 * MiB, ge=64 * 1024, le=1024 * MiB)
    workspace_roots: list[str] = Field(default_factory=list)
    keepalive_s: int = Field(default=20, ge=1, le=250)
    max_in_flight: int = Field(default=64, ge=1, le=10_000)
    session_idle_timeout_s: float = Field(default=1800.0, ge=1, le=86_400)
    max_sessions: int = Field(default=64, ge=1, le=10_000)
    context: ContextConfig = Field(default_factory=ContextConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    integrations: IntegrationsConfig = Field(default_factory=IntegrationsConfig)
    # A stable address for clients configured by hand (off by default: random port, fresh token).
    port: int = Field(default=0, ge=0, le=65535)
    token_file: bool = False
    diff: DiffConfig = Field(default_factory=DiffConfig)


def _drop_path(data: dict[str, Any], path: tuple[int | str, ...]) -> bool:
    """Remove the offending setting so its default applies; True if removed.

    Inside a section (a table of settings) only the bad key goes; a bad list or value goes whole.
    """
    node: Any = data
    for depth, key in enumerate(path):
        if not (isinstance(node, dict) and isinstance(key, str) and key in node):
            return False
        child = node[key]
        if depth == len(path) - 1 or not isinstance(child, dict):
            del node[key]
            return True
        node = node[key] = dict(child)
    return False


def _format_error(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    if err["type"] == "extra_forbidden":
        return f"unknown setting `{where}`"
    return f"`{where}`: {err['msg']} (got {err.get('input')!r})"


def load_config(raw: Any) -> tuple[CompanionConfig, list[str]]:
    """Validate `raw`; return the config (bad fields replaced by defaults) and readable problems."""
    if raw is None or raw == []:  # Lua's empty table arrives as a list
        raw = {}
    if not isinstance(raw, dict):
        return CompanionConfig(), [f"settings must be a table, got {type(raw).__name__}"]
    data: dict[str, Any] = dict(raw)
    problems: list[str] = []
    for _ in range(50):  # each round drops at least one bad field
        try:
            return CompanionConfig.model_validate(data), problems
        except ValidationError as exc:
            removed = False
            for err in exc.errors():
                problems.append(_format_error(err))
                removed = _drop_path(data, tuple(err["loc"])) or removed
            if not removed:
                break
    return CompanionConfig(), problems
