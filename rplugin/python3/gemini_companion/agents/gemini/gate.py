"""Gemini CLI's review gate: its `BeforeTool` hook, a command (gemini 0.61 runs no other hook
type) that is our own `hook_client.py`, run isolated (`python -I`), which posts the hook's input
to this server's `/hooks/gemini` with the token Neovim gives its children in
`GEMINI_CLI_IDE_AUTH_TOKEN` (never written into a settings file).

`replace` and `write_file` open as a review; the answer is `allow`, with `hookSpecificOutput.tool_input`
carrying the user's own changes (gemini builds the tool anew from it), or `deny` with a
reason the model reads. gemini's hook input does not say its approval mode, so the gate reviews
every edit it sees; in gemini's default mode with IDE mode on, gemini then shows the same edit
through `openDiff`, and that second ask is answered at once with the text the user just
accepted (`RecentlyAccepted`): one review per edit.
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from ...gate import (
    Decision,
    Edit,
    RecentlyAccepted,
    apply_replacements,
    edited_file,
    json_hook,
    review,
    whole_write,
)
from ...reviews import ReviewRefused, ReviewRegistry

log = logging.getLogger(__name__)

EDIT_TOOLS = ("replace", "write_file")
HOOK_EVENT = "BeforeTool"
HOOK_MATCHER = "|".join(EDIT_TOOLS)
ROUTE = "/hooks/gemini"
CLIENT = Path(__file__).resolve().parents[2] / "hook_client.py"


def hook(python: str = sys.executable) -> dict[str, Any]:
    """The entry `:GeminiGate install gemini` writes: our client, by absolute paths, isolated."""
    return {
        "name": "neovim-review-gate",
        "type": "command",
        "command": f"{shlex.quote(python)} -I {shlex.quote(str(CLIENT))} gemini",
        "timeout": 86_400_000,  # ms: the user may take their time (gemini's default is 60 s)
        "description": "Review gemini's edits in Neovim (gemini-companion.nvim)",
    }


# The class-level constant the gate registry reads (agents/gates.py); built with this host's Python.
HOOK = hook()


# gemini's turn ends: Neovim looks for what the turn changed without a review (same client, told
# apart by the hook's event name).
TURN_EVENT = "AfterAgent"
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [(HOOK_EVENT, HOOK_MATCHER, HOOK), (TURN_EVENT, "", HOOK)]


# Where the agent's settings keep hooks.
SECTION = "hooks"


def is_ours(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "command" and entry.get("name") == HOOK["name"]


def settings_file(scope: str, env: Mapping[str, str], project: str) -> Path:
    """gemini's settings: the user's (`$GEMINI_CLI_HOME` or ~, then .gemini), or the project's."""
    if scope == "project":
        return Path(project) / ".gemini" / "settings.json"
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME", "")) / ".gemini" / "settings.json"


def proposed_edit(tool: str, args: dict[str, Any], read: Callable[[str], str | None]) -> Edit | None:
    path = edited_file(args, "file_path")
    if tool not in EDIT_TOOLS or path is None:
        return None
    before = read(path)
    if tool == "write_file":
        return whole_write(tool, path, before, args.get("content"))
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if before is None:  # replace with an empty old_string creates a file
        return Edit(tool, path, "", new) if old == "" else None
    after = apply_replacements(before, [(old, new, args.get("allow_multiple") is True)])
    return Edit(tool, path, before, after) if after is not None else None


def answer(edit: Edit, decision: Decision, original: dict[str, Any]) -> dict[str, Any]:
    """The BeforeTool hook's output for the user's decision. gemini builds the tool anew from
    `tool_input`, so it carries all of the tool's arguments, not only those that change."""
    if not decision.accepted:
        return {
            "decision": "deny",
            "reason": decision.rejection(edit),
        }
    if decision.kept_as_is(edit):
        return {"decision": "allow", "reason": f"The user accepted this edit of {edit.name} in Neovim."}
    if decision.kept_the_file(edit):
        return {
            "decision": "deny",
            "reason": f"The user reviewed this edit of {edit.name} in Neovim and kept the file as it was.",
        }
    changes = (
        {"content": decision.final}
        if edit.tool == "write_file"
        else {"old_string": edit.before, "new_string": decision.final, "allow_multiple": False}
    )
    tool_input = {**original, **changes}
    return {
        "decision": "allow",
        "reason": f"The user accepted this edit of {edit.name} in Neovim, with changes of their own.",
        "hookSpecificOutput": {"hookEventName": HOOK_EVENT, "tool_input": tool_input},
    }


class GeminiGate:
    def __init__(
        self,
        reviews: ReviewRegistry,
        mode: Callable[[], str],
        read: Callable[[str], str | None],
        accepted: RecentlyAccepted,
        turn_ended: Callable[[str], None] = lambda _agent: None,
    ) -> None:
        self._reviews = reviews
        self._turn_ended = turn_ended
        self._mode = mode  # the `review.gate` setting ("auto-modes" reviews all it sees: see above)
        self._read = read
        self._accepted = accepted

    async def handle(self, request: web.Request) -> web.Response:
        """POST /hooks/gemini: the hook's input in, its output out (an empty object: no decision)."""
        return await json_hook(request, self.decide)

    async def decide(self, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("hook_event_name") == TURN_EVENT:
            self._turn_ended("Gemini CLI")
            return {}
        tool, tool_input = event.get("tool_name"), event.get("tool_input")
        if self._mode() == "never" or not isinstance(tool, str) or not isinstance(tool_input, dict):
            return {}
        edit = proposed_edit(tool, tool_input, self._read)
        if edit is None:
            return {}
        try:
            decision = await review(self._reviews, edit, None, "Gemini CLI")
        except ReviewRefused as exc:
            log.warning("gate: no review of %s: %s", edit.path, exc)
            return {}
        if decision.accepted:
            self._accepted.add(edit.path, decision.final)
        return answer(edit, decision, tool_input)
