"""The review gate, whichever agent's hook asks: an edit the agent is about to make, as the whole
file it would write, opened as a review; the answer is the user's decision and final text. Each
agent's gate (agents/<name>/gate.py) reads its hook's input into an `Edit` and writes its answer.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .reviews import PendingReview, ReviewRegistry, normalise


@dataclass(frozen=True)
class Edit:
    """One file edit an agent is about to make: the file's text now (empty for a new file), and
    the text the agent's tool would leave."""

    tool: str
    path: str
    before: str
    after: str

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


@dataclass(frozen=True)
class Decision:
    accepted: bool
    final: str  # the text the user accepted (their own edits included); the proposal when rejected
    comments: str | None = None  # rejected with comments: what the user wrote, for the model

    def rejection(self, edit: Edit) -> str:
        """Why the edit was denied, as the model reads it."""
        why = f"The user rejected this edit of {edit.name} in their editor (Neovim)."
        return f"{why}\n\n{self.comments}" if self.comments else why

    def kept_as_is(self, edit: Edit) -> bool:
        return self.final == edit.after

    def kept_the_file(self, edit: Edit) -> bool:
        return self.final == edit.before


def edited_file(args: dict[str, Any], key: str) -> str | None:
    """The file an edit tool's arguments name under `key`, if it is an absolute path (a relative
    one is the agent's tool's to refuse: we never guess what it is relative to)."""
    path = args.get(key)
    return path if isinstance(path, str) and os.path.isabs(path) else None


def whole_write(tool: str, path: str, before: str | None, content: object) -> Edit | None:
    """A tool that writes the whole file: `content` over the text now ('' for a new file)."""
    return Edit(tool, path, before or "", content) if isinstance(content, str) else None


def apply_replacements(before: str, edits: list[tuple[str, str, bool]]) -> str | None:
    """`before` after each (old, new, all occurrences) in turn; None when an `old` is empty or not
    there (the agent's tool refuses that edit itself, with its own message)."""
    after = before
    for old, new, every in edits:
        if not old or old not in after:
            return None
        after = after.replace(old, new) if every else after.replace(old, new, 1)
    return after


async def json_hook(
    request: web.Request, decide: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
) -> web.Response:
    """An agent's hook posted to us (hook_client.py): its JSON object in, `decide`'s answer out."""
    try:
        event = json.loads(await request.read())
    except ValueError:
        return web.json_response({"error": "the body is not JSON"}, status=400)
    if not isinstance(event, dict):
        return web.json_response({"error": "the body is not a JSON object"}, status=400)
    return web.json_response(await decide(event))


async def review(reviews: ReviewRegistry, edit: Edit, session_id: str | None, client_name: str) -> Decision:
    """Open `edit` as a review and wait for the user. Raises ReviewRefused when it cannot open."""
    outcome: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()

    def decided(pending: PendingReview, accepted: bool, final: str | None) -> None:
        if not outcome.done():
            outcome.set_result(Decision(accepted, edit.after if final is None else final, pending.comments))

    # A hook's deny carries a reason: a rejection's comments go there.
    await reviews.open(edit.path, edit.after, session_id, client_name, decided, carries_reason=True)
    return await outcome


class RecentlyAccepted:
    """Texts the user accepted through a gate a moment ago, by file: an agent that then asks
    through its IDE channel too (gemini in its default mode) gets its answer without a second
    review of the same text."""

    def __init__(self, window_s: float = 30.0) -> None:
        self._window_s = window_s
        self._texts: dict[str, tuple[str, float]] = {}

    def add(self, path: str, text: str) -> None:
        self._texts[normalise(path)] = (text, asyncio.get_running_loop().time())

    def take(self, path: str, text: str) -> bool:
        """True (once) if `text` for `path` is what the user accepted within the window."""
        held = self._texts.pop(normalise(path), None)
        return (
            held is not None
            and held[0] == text
            and asyncio.get_running_loop().time() - held[1] <= self._window_s
        )
