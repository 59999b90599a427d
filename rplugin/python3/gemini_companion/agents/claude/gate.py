"""Claude Code's review gate: its `PreToolUse` hook, called as an `mcp_tool` hook on the IDE
connection itself (server `ide`, tool `review_gate`), so no process starts per edit and no token
or port is written into claude's settings (`:GeminiGate install claude` writes the entry).

claude sends the hook's input through the entry's `${...}` interpolation: the tool's name, its
input as a JSON string, and the session's permission mode. An edit claude would apply without
asking (auto, acceptEdits, dontAsk, bypassPermissions) opens as a review; the user's decision is
the hook's answer: `allow` (with `updatedInput` carrying the user's own changes) or `deny` with
a reason the model reads. Where claude asks anyway (its default mode), the gate says nothing, and
claude's own prompt opens the review through `openDiff`: never two reviews of one edit.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...gate import Decision, Edit, apply_replacements, edited_file, review, whole_write
from ...reviews import ReviewRefused, ReviewRegistry
from ...tools import NativeTool, text_result

log = logging.getLogger(__name__)

TOOL_NAME = "review_gate"
# The modes in which claude applies an edit without asking, so no review would open otherwise.
APPLIES_WITHOUT_ASKING = frozenset({"auto", "acceptEdits", "dontAsk", "bypassPermissions"})
EDIT_TOOLS = ("Edit", "Write", "MultiEdit")
# What `:GeminiGate install claude` writes into claude's settings: a PreToolUse hook of type
# `mcp_tool` on the IDE connection (claude calls it `ide`), its input filled by claude's `${...}`.
HOOK_EVENT = "PreToolUse"
HOOK_MATCHER = "|".join(EDIT_TOOLS)
HOOK: dict[str, Any] = {
    "type": "mcp_tool",
    "server": "ide",
    "tool": TOOL_NAME,
    "input": {
        "tool_name": "${tool_name}",
        "tool_input": "${tool_input}",
        "permission_mode": "${permission_mode}",
    },
    # The user may take their time: claude waits this long (a day) for the review's answer.
    "timeout": 86400,
    "statusMessage": "Waiting for your review in Neovim",
}


TURN_TOOL = "turn_ended"
# claude's turn ends (its Stop hook): Neovim looks for what the turn changed without a review.
TURN_HOOK: dict[str, Any] = {"type": "mcp_tool", "server": "ide", "tool": TURN_TOOL, "timeout": 30}
# Every entry `:GeminiGate install claude` writes: (event, matcher, hook).
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [(HOOK_EVENT, HOOK_MATCHER, HOOK), ("Stop", "", TURN_HOOK)]


# Where the agent's settings keep hooks.
SECTION = "hooks"


def is_ours(hook: dict[str, Any]) -> bool:
    return (
        hook.get("type") == "mcp_tool"
        and hook.get("server") == "ide"
        and hook.get("tool") in (TOOL_NAME, TURN_TOOL)
    )


def settings_file(scope: str, env: Mapping[str, str], project: str) -> Path:
    """claude's settings file for `scope`: the user's (`$CLAUDE_CONFIG_DIR` or ~/.claude), or the
    project's own uncommitted one (`.claude/settings.local.json`: a hook that names this Neovim's
    connection is the user's, not the repository's)."""
    if scope == "project":
        return Path(project) / ".claude" / "settings.local.json"
    config_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", ""), ".claude")
    return Path(config_dir) / "settings.json"


def proposed_edit(tool: str, args: dict[str, Any], read: Callable[[str], str | None]) -> Edit | None:
    """The whole-file text `tool` would write; None where we cannot tell (claude then reports its
    own error, or the tool is not one we review)."""
    path = edited_file(args, "file_path")
    if tool not in EDIT_TOOLS or path is None:
        return None
    before = read(path)
    if tool == "Write":
        return whole_write(tool, path, before, args.get("content"))
    edits = [args] if tool == "Edit" else args.get("edits")
    if before is None or not isinstance(edits, list) or not edits:
        return None
    replacements = []
    for edit in edits:
        old, new = (
            (edit.get("old_string"), edit.get("new_string")) if isinstance(edit, dict) else (None, None)
        )
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        replacements.append((old, new, edit.get("replace_all") is True))
    after = apply_replacements(before, replacements)
    return Edit(tool, path, before, after) if after is not None else None


def updated_input(edit: Edit, final: str, original: dict[str, Any]) -> dict[str, Any]:
    """The tool's input that writes `final` (the user's text) instead of claude's proposal."""
    if edit.tool == "Write":
        return {**original, "content": final}
    if edit.tool == "Edit":
        return {"file_path": edit.path, "old_string": edit.before, "new_string": final, "replace_all": False}
    return {"file_path": edit.path, "edits": [{"old_string": edit.before, "new_string": final}]}


def hook_output(decision: str | None, reason: str = "", updated: dict[str, Any] | None = None) -> str:
    """The PreToolUse hook's answer: no decision (`{}`), allow or deny."""
    if decision is None:
        return "{}"
    out: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        out["permissionDecisionReason"] = reason
    if updated is not None:
        out["updatedInput"] = updated
    return json.dumps({"hookSpecificOutput": out}, ensure_ascii=False)


class ClaudeGate:
    def __init__(
        self,
        reviews: ReviewRegistry,
        mode: Callable[[], str],
        client_name: Callable[[str | None], str],
        read: Callable[[str], str | None],
        turn_ended: Callable[[str], None] = lambda _agent: None,
    ) -> None:
        self._reviews = reviews
        self._mode = mode  # the `review.gate` setting
        self._client_name = client_name
        self._read = read
        self._turn_ended = turn_ended  # what Neovim does when a turn ends (the changes review)

    def wants(self, permission_mode: str) -> bool:
        setting = self._mode()
        if setting == "never":
            return False
        return setting == "always" or permission_mode in APPLIES_WITHOUT_ASKING

    async def review_gate(self, args: dict[str, Any], session_id: str | None) -> Any:
        tool, mode = str(args.get("tool_name") or ""), str(args.get("permission_mode") or "")
        try:
            tool_input = json.loads(args.get("tool_input") or "null")
        except (TypeError, ValueError):
            tool_input = None
        if not isinstance(tool_input, dict) or not self.wants(mode):
            return text_result(hook_output(None))
        edit = proposed_edit(tool, tool_input, self._read)
        if edit is None:
            return text_result(hook_output(None))
        try:
            decision = await review(self._reviews, edit, session_id, self._client_name(session_id))
        except ReviewRefused as exc:
            # claude goes on as its mode says; the log says why no review opened.
            log.warning("gate: no review of %s: %s", edit.path, exc)
            return text_result(hook_output(None))
        return text_result(self.answer(edit, tool_input, decision))

    @staticmethod
    def answer(edit: Edit, tool_input: dict[str, Any], decision: Decision) -> str:
        if not decision.accepted:
            return hook_output("deny", decision.rejection(edit))
        if decision.kept_as_is(edit):
            return hook_output("allow", f"The user accepted this edit of {edit.name} in Neovim.")
        if decision.kept_the_file(edit):
            return hook_output(
                "deny", f"The user reviewed this edit of {edit.name} in Neovim and kept the file as it was."
            )
        return hook_output(
            "allow",
            f"The user accepted this edit of {edit.name} in Neovim, with changes of their own: the file now "
            "holds their text, not exactly what was proposed.",
            updated_input(edit, decision.final, tool_input),
        )

    async def turn(self, _args: dict[str, Any], _session_id: str | None) -> Any:
        """claude's Stop hook: the turn is over. No decision (`{}`): claude stops as it would."""
        self._turn_ended("Claude Code")
        return text_result(hook_output(None))

    def tools(self) -> list[NativeTool]:
        return [
            self.tool(),
            NativeTool(
                TURN_TOOL,
                "Not for the model: claude's Stop hook (:GeminiGate)",
                {"type": "object", "properties": {}},
                self.turn,
            ),
        ]

    def tool(self) -> NativeTool:
        string = {"type": "string"}
        return NativeTool(
            TOOL_NAME,
            "Not for the model: claude's PreToolUse hook (:GeminiGate) asks Neovim to review a file edit",
            {
                "type": "object",
                "properties": {"tool_name": string, "tool_input": string, "permission_mode": string},
                "required": ["tool_name", "tool_input"],
            },
            self.review_gate,
        )
