"""User configuration: validated with pydantic, bad fields fall back to their defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MiB = 1024 * 1024


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
    session_idle_timeout_s: float = Field(default=1800.0, ge=10, le=86_400)
    max_sessions: int = Field(default=64, ge=1, le=10_000)


def _drop_path(data: dict[str, Any], path: tuple[int | str, ...]) -> bool:
    """Remove the offending top-level setting so its default applies; True if removed."""
    if path and isinstance(path[0], str) and path[0] in data:
        del data[path[0]]
        return True
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
