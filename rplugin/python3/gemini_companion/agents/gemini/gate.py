"""Gemini CLI's review gate: its `BeforeTool` hook, a command (gemini 0.61 runs no other hook
type) that is our own `hook_client.py`, run isolated (`python -I`), which posts the hook's input
to this server's `/hooks/gemini` with the token Neovim gives its children in
`GEMINI_CLI_IDE_AUTH_TOKEN` (never written into a settings file).

`replace` and `write_file` open as a review; the answer is `allow`, with `hookSpecificOutput.tool_input`
carrying the user's own changes (gemini builds the tool anew from it), or `deny` with a
reason the model reads. gemini's hook input does not say its approval mode, so the gate reviews
every edit it sees; in gemini's default mode with IDE mode on, gemini then shows the same edit
through `openDiff`, and that second ask is answered at once with the text the user just
accepted (`pairing.AcceptedEdits`, until gemini's turn ends): one review per edit.
"""

from __future__ import annotations

import logging
import os
import re
import sys
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
    denied,
    edited_file,
    exact_replace,
    json_hook,
    review,
    whole_write,
)
from ...core.reviews import ReviewRegistry
from .. import gate_wants
from .pairing import AcceptedEdits

log = logging.getLogger(__name__)

EDIT_TOOLS = ("replace", "write_file")
HOOK_EVENT = "BeforeTool"
HOOK_MATCHER = "|".join(EDIT_TOOLS)
ROUTE = "/hooks/gemini"
CLIENT = HOOK_CLIENT


def hook(python: str = sys.executable) -> dict[str, Any]:
    """The entry `:GeminiGate install gemini` writes: our client, by absolute paths, isolated."""
    return {
        "name": "neovim-review-gate",
        "type": "command",
        "command": client_command("gemini", python),
        "timeout": 86_400_000,  # ms: the user may take their time (gemini's default is 60 s)
        "description": "Review gemini's edits in Neovim (gemini-companion.nvim)",
    }


# The class-level constant the gate registry reads (agents/hook_entries.py); built with this host's Python.
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


def _trailing_newline_as(original: str, text: str) -> str:
    """gemini's restoreTrailingNewline: the result ends with a newline iff the file did."""
    if original.endswith("\n") and not text.endswith("\n"):
        return text + "\n"
    if not original.endswith("\n") and text.endswith("\n"):
        return text[:-1]
    return text


def _indented(lines: list[str], indentation: str) -> list[str]:
    """gemini's applyIndentation: `lines` moved to `indentation`, relative to the first one's."""
    if not lines:
        return []
    reference = re.match(r"[ \t]*", lines[0])
    ref = reference.group(0) if reference else ""
    return [
        ""
        if not line.strip()
        else indentation + (line[len(ref) :] if line.startswith(ref) else line.lstrip())
        for line in lines
    ]


def _flexible(text: str, old: str, new: str) -> str | None:
    """gemini's calculateFlexibleReplacement: whole lines equal but for their leading and trailing
    whitespace; the replacement takes the first matched line's indentation."""
    source = re.findall(r".*(?:\n|$)", text)[:-1]
    wanted = [line.strip() for line in old.split("\n")]
    replacement_lines = new.split("\n")
    found, i = 0, 0
    while i <= len(source) - len(wanted):
        window = source[i : i + len(wanted)]
        if [line.strip() for line in window] == wanted:
            found += 1
            indentation = re.match(r"[ \t]*", window[0])
            block = "\n".join(_indented(replacement_lines, indentation.group(0) if indentation else ""))
            if new != "" and window[-1].endswith("\n") and not block.endswith("\n"):
                block += "\n"
            source[i : i + len(wanted)] = [block]
        i += 1
    return _trailing_newline_as(text, "".join(source)) if found else None


def _by_tokens(text: str, old: str, new: str, every: bool) -> str | None:
    """gemini's calculateRegexReplacement: the search's tokens with any whitespace between, at a
    line's start after its indentation."""
    spaced = old
    for delimiter in "():[]{}><=":
        spaced = spaced.replace(delimiter, f" {delimiter} ")
    tokens = spaced.split()
    if not tokens:
        return None
    pattern = re.compile(r"^([ \t]*)" + r"\s*".join(re.escape(t) for t in tokens), re.MULTILINE)
    if not pattern.search(text):
        return None
    new_lines = new.split("\n")
    done = pattern.sub(
        lambda m: "\n".join(_indented(new_lines, m.group(1) or "")), text, count=0 if every else 1
    )
    return _trailing_newline_as(text, done)


def gemini_replace(text: str, old: str, new: str, every: bool) -> tuple[str, bool] | None:
    """gemini's `replace`: exact, else line by line ignoring indentation, else token by token (its
    last resort, a fuzzy match by edit distance, is not modelled: such an edit is denied)."""
    crlf = "\r\n" in text
    text, old, new = (s.replace("\r\n", "\n") for s in (text, old, new))
    exact = exact_replace(text, old, new, every)
    if exact is not None:
        return _trailing_newline_as(text, exact[0]), not crlf
    loose = _flexible(text, old, new) or _by_tokens(text, old, new, every)
    return (loose, False) if loose is not None else None


def proposed_edit(
    tool: str, args: dict[str, Any], read: Callable[[str], str | None], cwd: object = None
) -> Edit:
    path = edited_file(args, "file_path", cwd)
    before = read(path)
    if tool == "write_file":
        return whole_write(tool, path, before, args.get("content"))
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise Unreviewable("old_string and new_string must be text")
    if before is None:  # replace with an empty old_string creates a file
        if old == "":
            return Edit(tool, path, "", new)
        raise Unreviewable(f"{os.path.basename(path)} does not exist: write it whole instead")
    after, exact = apply_replacements(
        path, before, [(old, new, args.get("allow_multiple") is True)], gemini_replace
    )
    return Edit(tool, path, before, after, exact)


def answer(edit: Edit, decision: Decision, original: dict[str, Any]) -> dict[str, Any]:
    """The BeforeTool hook's output for the user's decision. gemini builds the tool anew from
    `tool_input`, so it carries all of the tool's arguments, not only those that change."""
    if not decision.accepted:
        return denied(decision.rejection(edit))
    if decision.kept_the_file(edit):
        return denied(f"The user reviewed this edit of {edit.name} in Neovim and kept the file as it was.")
    if decision.lands_as_proposed(edit):
        return {"decision": "allow", "reason": decision.accepted_reason(edit)}
    changes = (
        {"content": decision.final}
        if edit.tool == "write_file"
        else {"old_string": edit.before, "new_string": decision.final, "allow_multiple": False}
    )
    tool_input = {**original, **changes}
    return {
        "decision": "allow",
        "reason": decision.accepted_reason(edit),
        "hookSpecificOutput": {"hookEventName": HOOK_EVENT, "tool_input": tool_input},
    }


class GeminiGate:
    def __init__(
        self,
        reviews: ReviewRegistry,
        mode: Callable[[], str],
        read: Callable[[str], str | None],
        accepted: AcceptedEdits,
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
            self._accepted.turn_ended(owner(event))
            self._turn_ended("Gemini CLI")
            return {}
        tool, tool_input = event.get("tool_name"), event.get("tool_input")
        if tool not in EDIT_TOOLS:
            return {}
        if not isinstance(tool_input, dict):
            return denied(Unreviewable("the tool's input is not a JSON object").reason())
        raw_path = tool_input.get("file_path")
        if not gate_wants(self._mode(), raw_path if isinstance(raw_path, str) else ""):
            return {}
        try:
            edit = proposed_edit(str(tool), tool_input, self._read, event.get("cwd"))
            decision = await review(self._reviews, edit, owner(event), "Gemini CLI")
        except Unreviewable as exc:
            log.warning("gate: denied %s without a review: %s", tool, exc)
            return denied(exc.reason())
        if decision.accepted:
            self._accepted.add(owner(event), edit.path, decision.final)
        return answer(edit, decision, tool_input)


def owner(event: dict[str, Any]) -> str | None:
    """Whose review it is: gemini's own session (its hook input names it), so another gemini's edit
    of a file under review is refused, not taken for this one's next proposal."""
    session = event.get("session_id")
    return f"gemini session {session}" if isinstance(session, str) and session else None
