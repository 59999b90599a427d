"""Claude Code's review gate: its `PreToolUse` hook, called as an `mcp_tool` hook on the IDE
connection itself (server `ide`, tool `review_gate`), so no token or port is written into claude's
settings (`:GeminiGate install claude` writes the entries).

claude sends the hook's input through the entry's `${...}` interpolation: the tool's name, its
input as a JSON string, the session's permission mode, its working folder and the tool call's id.
An edit claude would apply without asking (auto, acceptEdits, dontAsk, bypassPermissions) opens
as a review; the user's decision is the hook's answer: `allow` (with `updatedInput` carrying the
user's own changes) or `deny` with a reason the model reads. Where claude asks anyway (its default
mode), the gate says nothing, and claude's own prompt opens the review through `openDiff`: never
two reviews of one edit.

A failed `mcp_tool` hook lets claude go on (its `onFailure` default; `"block"` there would block
every claude that is not connected to a Neovim, which must go on as its mode says). So beside it
runs a guard, a command hook (`hook_client.py claude`, as gemini's gate): in a claude that Neovim
started, it posts the same tool call to `/hooks/claude` and waits for the same decision (the two
are one review, paired by claude's `tool_use_id`); when Neovim cannot be reached or the connection
drops, the guard denies. A claude that Neovim did not start gets no decision from the guard.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from ...core.review_gate import (
    HOOK_CLIENT,
    Decision,
    Edit,
    Unreviewable,
    apply_replacements,
    client_command,
    edited_file,
    exact_replace,
    json_hook,
    review,
    whole_write,
)
from ...core.reviews import ReviewRegistry
from ...core.tools import NativeTool, text_result
from .. import gate_wants
from . import notebook

log = logging.getLogger(__name__)

TOOL_NAME = "review_gate"
# Answers kept for a tool call's second hook (they come a moment apart; a few in flight at most).
_CALLS_KEPT = 64
# The modes in which claude applies an edit without asking, so no review would open otherwise.
APPLIES_WITHOUT_ASKING = frozenset({"auto", "acceptEdits", "dontAsk", "bypassPermissions"})
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", notebook.TOOL)
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
        "cwd": "${cwd}",
        "tool_use_id": "${tool_use_id}",
        "session_id": "${session_id}",
    },
    # The user may take their time: claude waits this long (a day) for the review's answer.
    "timeout": 86400,
    "statusMessage": "Waiting for your review in Neovim",
}


TURN_TOOL = "turn_ended"
# claude's turn ends (its Stop hook): Neovim looks for what the turn changed without a review.
TURN_HOOK: dict[str, Any] = {"type": "mcp_tool", "server": "ide", "tool": TURN_TOOL, "timeout": 30}
ROUTE = "/hooks/claude"
CLIENT = HOOK_CLIENT


def guard(python: str = sys.executable) -> dict[str, Any]:
    """The guard beside the mcp_tool hook: our client, by absolute paths, isolated (see above)."""
    return {
        "type": "command",
        "command": client_command("claude", python),
        "timeout": 86400,
    }


GUARD = guard()
# Every entry `:GeminiGate install claude` writes: (event, matcher, hook); the two PreToolUse ones
# are one group, run side by side.
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [
    (HOOK_EVENT, HOOK_MATCHER, HOOK),
    (HOOK_EVENT, HOOK_MATCHER, GUARD),
    ("Stop", "", TURN_HOOK),
]


# Where the agent's settings keep hooks.
SECTION = "hooks"


def is_ours(hook: dict[str, Any]) -> bool:
    if hook.get("type") == "command":
        return str(hook.get("command", "")).endswith("hook_client.py claude")
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


# claude's Edit finds `old_string` with typographic quotes made plain when it is not there as
# given, then writes the file's own quote style into `new_string` (its normalizeQuotes and
# preserveQuoteStyle): the review must show what claude will write.
_PLAIN_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_OPENING_AFTER = frozenset(" \t\n\r([{<")


def _with_file_quotes(new: str, found: str) -> str:
    """`new` with straight quotes curled as in `found` (the file's text that matched)."""
    curled = {'"': any(q in found for q in "\u201c\u201d"), "'": any(q in found for q in "\u2018\u2019")}
    curly = {('"', True): "\u201c", ('"', False): "\u201d", ("'", True): "\u2018", ("'", False): "\u2019"}
    out = []
    for i, char in enumerate(new):
        opening = i == 0 or new[i - 1] in _OPENING_AFTER
        out.append(curly[char, opening] if curled.get(char) else char)
    return "".join(out)


def claude_replace(text: str, old: str, new: str, every: bool) -> tuple[str, bool] | None:
    """claude's Edit: `old` as given, else as found with plain quotes."""
    done = exact_replace(text, old, new, every)
    if done is not None:
        return done
    plain_text, plain_old = text.translate(_PLAIN_QUOTES), old.translate(_PLAIN_QUOTES)
    at = plain_text.find(plain_old)
    if at < 0:
        return None
    found = text[at : at + len(old)]  # the translation keeps every length
    replaced = exact_replace(text, found, _with_file_quotes(new, found), every)
    return (replaced[0], False) if replaced is not None else None


def proposed_edit(
    tool: str, args: dict[str, Any], read: Callable[[str], str | None], cwd: object = None
) -> Edit:
    """The whole-file text `tool` would write; Unreviewable where it cannot be shown as claude
    would write it."""
    path = edited_file(args, "notebook_path" if tool == notebook.TOOL else "file_path", cwd)
    before = read(path)
    if tool == "Write":
        return whole_write(tool, path, before, args.get("content"))
    if tool == notebook.TOOL:
        return notebook.proposed(path, before, args)
    edits = [args] if tool == "Edit" else args.get("edits")
    if before is None:
        raise Unreviewable(f"{os.path.basename(path)} does not exist: write it whole instead")
    if not isinstance(edits, list) or not edits:
        raise Unreviewable("the tool names no edits")
    replacements = []
    for edit in edits:
        old, new = (
            (edit.get("old_string"), edit.get("new_string")) if isinstance(edit, dict) else (None, None)
        )
        if not isinstance(old, str) or not isinstance(new, str):
            raise Unreviewable("old_string and new_string must be text")
        replacements.append((old, new, edit.get("replace_all") is True))
    after, exact = apply_replacements(path, before, replacements, claude_replace)
    return Edit(tool, path, before, after, exact)


def updated_input(edit: Edit, final: str, original: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's input that writes `final` (the user's text) instead of claude's proposal; None
    where the tool cannot carry it."""
    if edit.tool == notebook.TOOL:
        return notebook.carried(edit, final, original)
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
        # One tool call's answer, by its tool_use_id: its two hooks (mcp_tool, guard) share it.
        self._calls: OrderedDict[str, asyncio.Future[str]] = OrderedDict()

    async def review_gate(self, args: dict[str, Any], session_id: str | None) -> Any:
        """The mcp_tool hook: the tool's input comes as a JSON string."""
        try:
            tool_input = json.loads(args.get("tool_input") or "null")
        except (TypeError, ValueError, RecursionError):
            tool_input = None
        call = {**args, "tool_input": tool_input}
        return text_result(await self._shared(call, session_id, self._client_name(session_id)))

    async def handle(self, request: web.Request) -> web.Response:
        """POST /hooks/claude: the guard (hook_client.py claude) with claude's hook input."""

        async def decide(event: dict[str, Any]) -> dict[str, Any]:
            answer: dict[str, Any] = json.loads(await self._shared(event, None, "Claude Code"))
            return answer

        return await json_hook(request, decide)

    async def _shared(self, call: dict[str, Any], session_id: str | None, client: str) -> str:
        """The answer to one tool call, whichever of its two hooks asks first; the other gets the
        same (by claude's tool_use_id, unique per call). Shielded: one asker going away (its
        connection dropped) does not end the review the other waits on."""
        key = call.get("tool_use_id")
        if not isinstance(key, str) or not key or "${" in key:  # not filled in: no pairing
            return await self._answer(call, session_id, client)
        task = self._calls.get(key)
        if task is None:
            task = asyncio.ensure_future(self._answer(call, session_id, client))
            self._calls[key] = task
            while len(self._calls) > _CALLS_KEPT:
                self._calls.popitem(last=False)
        return await asyncio.shield(task)

    async def _answer(self, call: dict[str, Any], session_id: str | None, client: str) -> str:
        # The review belongs to claude's own session (both hooks name it; another claude's edit of
        # a file under review is refused, not merged), else to the connection that asked.
        own = call.get("session_id")
        if isinstance(own, str) and own and "${" not in own:
            session_id = f"claude session {own}"
        tool, mode = str(call.get("tool_name") or ""), str(call.get("permission_mode") or "")
        tool_input = call.get("tool_input")
        if tool not in EDIT_TOOLS:
            return hook_output(None)
        if not isinstance(tool_input, dict):
            return hook_output("deny", Unreviewable("the tool's input is not a JSON object").reason())
        raw_path = tool_input.get("notebook_path" if tool == notebook.TOOL else "file_path")
        applies = mode in APPLIES_WITHOUT_ASKING
        if not gate_wants(self._mode(), raw_path if isinstance(raw_path, str) else "", applies):
            return hook_output(None)
        try:
            edit = proposed_edit(tool, tool_input, self._read, call.get("cwd"))
            decision = await review(self._reviews, edit, session_id, client)
        except Unreviewable as exc:
            log.warning("gate: denied %s without a review: %s", tool, exc)
            return hook_output("deny", exc.reason())
        except Exception as exc:  # a failed hook lets claude go on: never that
            log.exception("gate: %s failed", tool)
            return hook_output("deny", Unreviewable(f"Neovim's review failed ({exc})").reason())
        return self.answer(edit, tool_input, decision)

    @staticmethod
    def answer(edit: Edit, tool_input: dict[str, Any], decision: Decision) -> str:
        if not decision.accepted:
            return hook_output("deny", decision.rejection(edit))
        if decision.kept_the_file(edit):
            return hook_output(
                "deny", f"The user reviewed this edit of {edit.name} in Neovim and kept the file as it was."
            )
        if decision.lands_as_proposed(edit):
            return hook_output("allow", decision.accepted_reason(edit))
        updated = updated_input(edit, decision.final, tool_input)
        if updated is None:
            return hook_output(
                "deny",
                f"The user accepted this edit of {edit.name} in Neovim with changes of their own that "
                f"{edit.tool} cannot make (only the edited cell's text can change): nothing was written. "
                "Ask the user how to go on.",
            )
        return hook_output("allow", decision.accepted_reason(edit), updated)

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
                "properties": {
                    "tool_name": string,
                    "tool_input": string,
                    "permission_mode": string,
                    "cwd": string,
                    "tool_use_id": string,
                    "session_id": string,
                },
                "required": ["tool_name", "tool_input"],
            },
            self.review_gate,
        )
