"""`ide/contextUpdate` payloads, validated so nothing malformed ever reaches the CLI.

One bad notification (a `null` in an optional field, a string where a number belongs)
disconnects Gemini CLI, so whatever Lua sends is checked and re-serialised here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...config import MAX_FILES, MAX_SELECTION_CHARS


class Cursor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    line: int = Field(ge=1)
    character: int = Field(ge=1)


class OpenFile(BaseModel):
    model_config = ConfigDict(extra="ignore")
    path: str = Field(min_length=1)
    timestamp: int = Field(ge=0)
    isActive: bool | None = None
    cursor: Cursor | None = None
    selectedText: str | None = None


class WorkspaceState(BaseModel):
    model_config = ConfigDict(extra="ignore")
    openFiles: list[OpenFile] = Field(default_factory=list)
    isTrusted: bool | None = None


def build_context(raw: Any, *, is_trusted: bool | None = None, max_files: int = MAX_FILES) -> dict[str, Any]:
    """Validate Lua's snapshot and return the `ide/contextUpdate` params (never a `null` inside)."""
    files_raw = raw.get("openFiles") if isinstance(raw, dict) else None
    files: list[OpenFile] = []
    for item in files_raw if isinstance(files_raw, list) else []:
        try:
            files.append(OpenFile.model_validate(item))
        except ValidationError:
            continue  # one odd buffer must not cost the whole update
    files.sort(key=lambda f: f.timestamp, reverse=True)
    files = files[:max_files]
    for index, entry in enumerate(files):
        if index > 0 or not entry.isActive:
            # The CLI keeps cursor/selection only on the newest file, and only if it is active.
            entry.isActive, entry.cursor, entry.selectedText = None, None, None
        elif entry.selectedText is not None:
            if entry.selectedText == "":
                entry.selectedText = None
            else:
                entry.selectedText = entry.selectedText[:MAX_SELECTION_CHARS]
    state = WorkspaceState(openFiles=files, isTrusted=is_trusted)
    return {"workspaceState": state.model_dump(exclude_none=True)}
