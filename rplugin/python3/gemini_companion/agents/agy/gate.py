"""The Antigravity CLI's review gate: its `PreToolUse` hook. agy runs a command hook from a
`hooks.json` (per its docs: JSON in on stdin, JSON out on stdout, camelCase), which is our own
`hook_client.py agy`, posting the hook's input to this server's `/hooks/agy`.

`write_to_file` and `replace_file_content` open as a review. The answer is `allow`, with
`overwrite` (a shallow merge into the tool's arguments) carrying the user's own changes, or `deny`
with a reason the model reads. Tested against the real engine's hook path (google-antigravity's
localharness, through its SDK's pre-tool hook); that agy runs `hooks.json` commands this way
follows agy's docs only: the SDK does not read agy's config files.
"""

from __future__ import annotations

import contextlib
import logging
import os
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
    json_hook,
    review,
    whole_write,
)
from ...core.reviews import ReviewRegistry
from .. import gate_wants

log = logging.getLogger(__name__)

# agy's docs name its edit tools write_to_file and replace_file_content; its engine's own names,
# with the same arguments, are create_file and edit_file. The gate matches both.
WRITES = ("write_to_file", "create_file")
REPLACES = ("replace_file_content", "edit_file")
EDIT_TOOLS = WRITES + REPLACES
ROUTE = "/hooks/agy"
CLIENT_NAME = "Antigravity CLI"
CLIENT = HOOK_CLIENT

# agy's hooks.json holds named sets of hooks (its docs): ours is one set, the user's stay as they are.
SECTION = "gemini-companion"
HOOK_EVENT = "PreToolUse"


def hook(python: str = sys.executable) -> dict[str, Any]:
    """The entry `:GeminiGate install agy` writes: our client, by absolute paths, isolated."""
    return {
        "type": "command",
        "command": client_command("agy", python),
        "timeout": 86_400,  # s: the user may take their time (agy's default is 30 s)
    }


HOOK = hook()
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [(HOOK_EVENT, "|".join(EDIT_TOOLS), HOOK)]


def is_ours(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "command" and str(entry.get("command", "")).endswith(" agy")


# Our agy plugin (lua/gemini_companion/agents/agy/plugin.lua writes it): its hooks.json, at its
# root, holds the gate for every workspace.
PLUGIN = Path(".gemini") / "antigravity-cli" / "plugins" / "gemini-companion-nvim"
NO_FILE = ":GeminiExtensionInstall agy installs agy's plugin, whose hooks.json holds it for every workspace"


def settings_file(scope: str, env: Mapping[str, str], project: str) -> Path | None:
    """Where agy reads hooks, per its docs: the workspace's `.agents/hooks.json`; for the user, our
    plugin's hooks.json, once the plugin is there (agy's docs name no hooks file of the user's own,
    and a hooks.json without a plugin.json beside it is no plugin)."""
    if scope == "project":
        return Path(project) / ".agents" / "hooks.json"
    plugin = Path(env.get("HOME") or Path.home()) / PLUGIN
    return plugin / "hooks.json" if (plugin / "plugin.json").is_file() else None


def _line(args: dict[str, Any], key: str) -> int | None:
    value = args.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first(text: str, old: str, new: str, every: bool) -> tuple[str, bool] | None:
    """The engine's replacement: the first occurrence, or every one with AllowMultiple."""
    if old not in text:
        return None
    return (text.replace(old, new) if every else text.replace(old, new, 1)), True


def replaced(path: str, before: str, args: dict[str, Any]) -> str:
    """`before` after `replace_file_content`: TargetContent becomes ReplacementContent (every
    occurrence with AllowMultiple), searched within StartLine..EndLine when they are given."""
    target, replacement = args.get("TargetContent"), args.get("ReplacementContent")
    if not isinstance(target, str) or not isinstance(replacement, str):
        raise Unreviewable("TargetContent and ReplacementContent must be text")
    edit = (target, replacement, args.get("AllowMultiple") is True)
    start, end = _line(args, "StartLine"), _line(args, "EndLine")
    if start and end and start <= end:
        lines = before.splitlines(keepends=True)
        head, body, tail = "".join(lines[: start - 1]), "".join(lines[start - 1 : end]), "".join(lines[end:])
        with contextlib.suppress(Unreviewable):
            return head + apply_replacements(path, body, [edit], _first)[0] + tail
    return apply_replacements(path, before, [edit], _first)[0]


def proposed_edit(
    tool: str, args: dict[str, Any], read: Callable[[str], str | None], cwd: object = None
) -> Edit:
    path = edited_file(args, "TargetFile", cwd)
    before = read(path)
    if tool in WRITES:
        return whole_write(tool, path, before, args.get("CodeContent"))
    if before is None:
        raise Unreviewable(f"{os.path.basename(path)} does not exist: write it whole instead")
    return Edit(tool, path, before, replaced(path, before, args))


def answer(edit: Edit, decision: Decision) -> dict[str, Any]:
    """The PreToolUse hook's output for the user's decision."""
    if not decision.accepted:
        return denied(decision.rejection(edit))
    if decision.kept_the_file(edit):
        reason = f"The user reviewed this edit of {edit.name} in Neovim and kept the file as it was."
        return denied(reason)
    if decision.lands_as_proposed(edit):
        return {"decision": "allow", "reason": decision.accepted_reason(edit)}
    if edit.tool in WRITES:
        overwrite: dict[str, Any] = {"CodeContent": decision.final}
    else:  # the whole file for the whole file: the user's text, wherever they changed it
        lines = max(1, len(edit.before.splitlines()))
        overwrite = {
            "TargetContent": edit.before,
            "ReplacementContent": decision.final,
            "AllowMultiple": False,
            "StartLine": 1,
            "EndLine": lines,
        }
    return {
        "decision": "allow",
        "reason": decision.accepted_reason(edit),
        "overwrite": overwrite,
    }


class AgyGate:
    def __init__(
        self, reviews: ReviewRegistry, mode: Callable[[], str], read: Callable[[str], str | None]
    ) -> None:
        self._reviews = reviews
        self._mode = mode  # the `review.gate` setting: agy's hook input does not say its mode
        self._read = read

    async def handle(self, request: web.Request) -> web.Response:
        """POST /hooks/agy: the hook's input in, its output out (an empty object: no decision)."""
        return await json_hook(request, self.decide)

    async def decide(self, event: dict[str, Any]) -> dict[str, Any]:
        call = event.get("toolCall")
        tool, args = (call.get("name"), call.get("args")) if isinstance(call, dict) else (None, None)
        if tool not in EDIT_TOOLS:
            return {}
        if not isinstance(args, dict):
            return denied(Unreviewable("the tool's arguments are not a JSON object").reason())
        raw_path = args.get("TargetFile")
        if not gate_wants(self._mode(), raw_path if isinstance(raw_path, str) else ""):
            return {}
        try:
            edit = proposed_edit(str(tool), args, self._read, event.get("cwd"))
            decision = await review(self._reviews, edit, None, CLIENT_NAME)
        except Unreviewable as exc:
            log.warning("gate: denied %s without a review: %s", tool, exc)
            return denied(exc.reason())
        return answer(edit, decision)
