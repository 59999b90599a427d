"""User configuration: validated with pydantic, bad fields fall back to their defaults."""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

MiB = 1024 * 1024


MAX_SELECTION_CHARS = 16384  # context.lua cuts at the same number, sent with the settings
MAX_FILES = 10  # what Gemini CLI reads; also the bound of the `context.max_files` setting


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ContextConfig(_Section):
    """What Gemini CLI is told about the editor (`ide/contextUpdate`)."""

    enabled: bool = True
    debounce_ms: int = Field(default=50, ge=0, le=5000)
    selection_demotion_ms: int = Field(default=50, ge=0, le=5000)
    max_files: int = Field(default=MAX_FILES, ge=1, le=MAX_FILES)
    is_trusted: bool | None = None  # omitted from updates unless set

    @computed_field  # type: ignore[prop-decorator]
    @property
    def max_selection_chars(self) -> int:
        """Not a setting: the cap agents/gemini/context.py applies, sent to Lua with these settings so that
        context.lua cuts a long selection before sending it, from this one number."""
        return MAX_SELECTION_CHARS


class ReviewKeymaps(_Section):
    """Normal-mode keys in a proposal (false: unmapped). The per-hunk ones are Vim's own diff keys
    (`]c`/`[c` jump, `do` obtains the other side's text, `dp` puts this side's), capitals for all."""

    accept: str | Literal[False] = False
    reject: str | Literal[False] = False
    keep_hunk: str | Literal[False] = "dp"
    drop_hunk: str | Literal[False] = "do"
    keep_all: str | Literal[False] = "dP"
    drop_all: str | Literal[False] = "dO"
    next_hunk: str | Literal[False] = "]c"
    prev_hunk: str | Literal[False] = "[c"
    # A comment on the line (Visual: the lines) for the agent (:GeminiComments). Not `c`: the
    # proposal is editable, and `c` is Vim's change operator there.
    comment: str | Literal[False] = "<LocalLeader>c"


class ChangesConfig(_Section):
    """What :GeminiChanges keeps of the workspace, snapshotted when an agent session connects."""

    max_bytes: int = Field(default=32 * MiB, ge=0, le=4096 * MiB)  # text kept in all (past it: size+time)
    max_file_bytes: int = Field(default=MiB, ge=0, le=1024 * MiB)  # text kept per file
    # Files looked at per workspace folder, where git cannot compare (no repository, or no commit).
    max_files: int = Field(default=20_000, ge=1, le=1_000_000)


class TerminalConfig(_Section):
    """The agent beside the editor: `:Gemini`'s terminal, and where `:GeminiSend` types (Lua reads these)."""

    cmd: str | list[str] = "gemini"  # a string runs through 'shell'; a list is the argv itself
    provider: Literal["native", "snacks", "none"] = "native"  # none: you run the agent elsewhere (tmux)
    position: Literal["right", "left", "bottom", "top", "float"] = "right"
    size: float = Field(default=0.4, gt=0, le=1000)  # below 1: a fraction of the editor; else columns/lines
    scope: Literal["global", "tab"] = "global"  # one agent for all tabs, or one per tab
    tmux_target: str = ""  # provider none, inside tmux: the pane running the agent (e.g. "{right}", "%3")


class ToolGroups(_Section):
    """Built-in tool groups; each can be switched off. User-registered tools are always listed."""

    buffers: bool = True
    editor: bool = True
    diagnostics: bool = True
    lsp: bool = True
    undo: bool = True
    dap: bool = True


class ToolsConfig(_Section):
    prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_.-]{0,32}$")  # e.g. "nvim_"
    groups: ToolGroups = Field(default_factory=ToolGroups)
    # Path arguments of the built-in tools must lie inside the workspace roots (symlinks resolved).
    restrict_to_workspace: bool = False


class IntegrationsConfig(_Section):
    opencode: bool = False  # follow sudo-tee/opencode.nvim's server and register with it
    opencode_url: str = Field(default="http://127.0.0.1:4096", pattern=r"^https?://")
    opencode_name: str = Field(default="nvim", pattern=r"^[A-Za-z0-9_-]{1,64}$")


class ReviewConfig(_Section):
    """How an agent's proposed edits (`openDiff`, or an edit its pre-tool hook stops) are reviewed."""

    # The two sides side by side, stacked, or one editable buffer with removed lines shown inline.
    layout: Literal["vertical", "horizontal", "unified"] = "vertical"
    new_tab: bool = True  # False: open in the current tab
    focus: bool = True  # jump to the review (False: stay where you are, e.g. in the terminal)
    keymaps: ReviewKeymaps = Field(default_factory=ReviewKeymaps)
    # Proposals waiting for your decision, per MCP session and all together; past a limit
    # openDiff is refused with an error naming the setting.
    max_pending_per_session: int = Field(default=8, ge=1, le=1000)
    max_pending: int = Field(default=32, ge=1, le=10_000)
    max_pending_bytes_per_session: int = Field(default=64 * MiB, ge=MiB, le=16 * 1024 * MiB)
    max_pending_bytes: int = Field(default=256 * MiB, ge=MiB, le=16 * 1024 * MiB)
    # The review gate: an agent's file edit becomes a review through its pre-tool hook (:GeminiGate).
    # auto-modes: only where no review would happen otherwise (the agent edits without asking);
    # always: every edit the hook sees; never: none but edits of an agent's own settings files,
    # which are always reviewed (they decide whether the gate runs at all).
    gate: Literal["auto-modes", "always", "never"] = "auto-modes"


class ClaudeConfig(_Section):
    """Claude Code's IDE channel: a WebSocket on the same port, its lock file, CLAUDE_CODE_SSE_PORT."""

    enabled: bool = True


class CompanionConfig(BaseModel):
    """Settings from `require('gemini_companion').setup({...})` and/or `vim.g.gemini_companion`."""

    # strict: a Lua string where a number belongs is reported, not silently coerced.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    auto_start: bool = True
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    tool_timeout_ms: int = Field(default=5000, ge=100, le=3_600_000)
    # The largest request (an openDiff carries the whole proposed file): the 1 M-line file of the
    # growth bench (~22 MiB as JSON) with room to spare, and every file `max_file_bytes` reads.
    max_body_bytes: int = Field(default=24 * MiB, ge=64 * 1024, le=1024 * MiB)
    # The most a tool reads from disk or loads into a hidden buffer, and a review's on-disk side.
    max_file_bytes: int = Field(default=16 * MiB, ge=64 * 1024, le=1024 * MiB)
    workspace_roots: list[str] = Field(default_factory=list)
    keepalive_s: int = Field(default=20, ge=1, le=250)
    max_in_flight: int = Field(default=64, ge=1, le=10_000)
    session_idle_timeout_s: float = Field(default=1800.0, ge=1, le=86_400)
    max_sessions: int = Field(default=64, ge=1, le=10_000)
    context: ContextConfig = Field(default_factory=ContextConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    integrations: IntegrationsConfig = Field(default_factory=IntegrationsConfig)
    claude: ClaudeConfig = Field(default_factory=ClaudeConfig)
    # A stable address for clients configured by hand (off by default: random port, fresh token).
    port: int = Field(default=0, ge=0, le=65535)
    token_file: bool = False
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    changes: ChangesConfig = Field(default_factory=ChangesConfig)
    terminal: TerminalConfig = Field(default_factory=TerminalConfig)
    # How gemini names this Neovim ("Connected to Neovim (api)"); {project}: the working directory's name.
    display_name: str = Field(default="Neovim ({project})", min_length=1, max_length=80)

    @property
    def tool_timeout_s(self) -> float:
        """`tool_timeout_ms` in the seconds asyncio counts in (the one place it is converted)."""
        return self.tool_timeout_ms / 1000


Loc = tuple[int | str, ...]  # where pydantic says an error is
Path = tuple[str, ...]  # a setting: keys into the user's tables


def _setting_of(data: dict[str, Any], loc: Loc) -> Path | None:
    """The setting an error is about: inside a section (a table of settings) the bad key alone,
    a bad list or value whole. pydantic's `loc` may go deeper than the user's table (into a list,
    or into the members of a union such as `reject.str`): those parts are cut off."""
    node: Any = data
    path: list[str] = []
    for key in loc:
        if not (isinstance(node, dict) and isinstance(key, str) and key in node):
            return None
        node = node[key]
        path.append(key)
        if len(path) == len(loc) or not isinstance(node, dict):
            return tuple(path)
    return None


def _drop(data: dict[str, Any], path: Path) -> None:
    """Remove the setting at `path` so its default applies, copying the tables on the way:
    the caller's tables are never changed."""
    node = data
    for key in path[:-1]:
        copy = dict(node[key])
        node[key] = copy
        node = copy
    del node[path[-1]]


def _format_error(loc: Loc, errors: list[Any]) -> str:
    where = ".".join(str(p) for p in loc) or "(root)"
    if errors[0]["type"] == "extra_forbidden":
        return f"unknown setting `{where}`"
    # One line per setting, even when a union's members each complain (`str | False`).
    wanted = [errors[0]["msg"]]
    for err in errors[1:]:
        alternative = err["msg"].removeprefix("Input should be ")
        if alternative not in wanted:
            wanted.append(alternative)
    return f"`{where}`: {' or '.join(wanted)} (got {errors[0].get('input')!r})"


# Renamed while nothing was released: reviews were set under `diff`, :GeminiChanges under `changes`.
# The old keys are still read (where both are set, the new one wins); :checkhealth names each one set.
OLD_SECTION = "diff"


def _new_name(key: str, value: Any) -> list[tuple[str, str, str, Any]]:
    """Where `diff.<key>` went: (old name, section, key, value) for each setting it holds."""
    if key == "changes" and isinstance(value, dict | list):  # Lua's empty table arrives as a list
        items = value.items() if isinstance(value, dict) else []
        return [(f"{OLD_SECTION}.changes.{k}", "changes", k, v) for k, v in items]
    return [(f"{OLD_SECTION}.{key}", "review", key, value)]


def _read_renamed(data: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """`data` with the old `diff` keys moved to their new places (a copy: the caller's tables are
    never changed), and each old key the user set with its new name."""
    old = data.get(OLD_SECTION)
    if not isinstance(old, dict | list):  # absent, or not a table: the validator says so
        return data, []
    data = {k: v for k, v in data.items() if k != OLD_SECTION}
    renamed: list[tuple[str, str]] = []
    for key, value in old.items() if isinstance(old, dict) else []:
        for old_name, section, new_key, setting in _new_name(key, value):
            table = data.get(section, {})
            if table == []:
                table = {}
            if isinstance(table, dict):  # else the new section is bad itself, and reported
                data[section] = {new_key: setting} | table
            renamed.append((old_name, f"{section}.{new_key}"))
    return data, renamed


def renamed_settings(raw: Any) -> list[tuple[str, str]]:
    """Each old setting the user set, with its new name (for :checkhealth)."""
    return _read_renamed(raw)[1] if isinstance(raw, dict) else []


def load_config(raw: Any) -> tuple[CompanionConfig, list[str]]:
    """Validate `raw`; return the config (bad fields replaced by defaults) and readable problems."""
    if raw is None or raw == []:  # Lua's empty table arrives as a list
        raw = {}
    if not isinstance(raw, dict):
        return CompanionConfig(), [f"settings must be a table, got {type(raw).__name__}"]
    data, _ = _read_renamed(dict(raw))
    problems: list[str] = []
    for _ in range(50):  # each round drops at least one bad field
        try:
            return CompanionConfig.model_validate(data), problems
        except ValidationError as exc:
            by_place: dict[Loc, list[Any]] = {}
            to_drop: set[Path] = set()
            for err in exc.errors():
                loc = tuple(err["loc"])
                path = _setting_of(data, loc)
                if path is not None:
                    to_drop.add(path)
                    # Name the item of a list (`workspace_roots.0`), not a union's member (`.str`).
                    rest = loc[len(path) :]
                    loc = path + tuple(itertools.takewhile(lambda part: isinstance(part, int), rest))
                by_place.setdefault(loc, []).append(err)
            problems.extend(_format_error(loc, errors) for loc, errors in by_place.items())
            for path in to_drop:
                _drop(data, path)
            if not to_drop:
                break
    return CompanionConfig(), problems


def editor_settings(config: CompanionConfig, renamed: list[tuple[str, str]]) -> dict[str, Any]:
    """The validated settings the editor half reads (context tracking, reviews, :GeminiChanges),
    and the old names the user set, each with its new one (:checkhealth names them): ON_READY's
    `settings`, and what tests/lua's specs start with."""
    return {
        "context": config.context.model_dump(),
        "review": config.review.model_dump(),
        "changes": config.changes.model_dump(),
        "renamed": [list(pair) for pair in renamed],
        "integrations": config.integrations.model_dump(),
        "token_file": config.token_file,
    }
