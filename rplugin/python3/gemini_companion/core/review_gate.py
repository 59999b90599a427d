"""The review gate, whichever agent's hook asks: an edit the agent is about to make, as the whole
file it would write, opened as a review; the answer is the user's decision and final text. Each
agent's gate (agents/<name>/gate.py) reads its hook's input into an `Edit` and writes its answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import stat
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from .reviews import PendingReview, ReviewRefused, ReviewRegistry


@dataclass(frozen=True)
class Edit:
    """One file edit an agent is about to make: the file's text now (empty for a new file), and
    the text the agent's tool would leave."""

    tool: str
    path: str
    before: str
    after: str
    # The agent's own tool finds what it replaces exactly as given; when not (it matched loosely),
    # an accepted edit carries the reviewed text, so what lands is exactly what the user saw.
    exact: bool = True

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

    def lands_as_proposed(self, edit: Edit) -> bool:
        """Accepted as proposed, and the agent's own tool, left alone, writes exactly that text."""
        return self.kept_as_is(edit) and edit.exact

    def accepted_reason(self, edit: Edit) -> str:
        """What the model reads when the user accepted (with their own changes or not)."""
        if self.kept_as_is(edit):
            return f"The user accepted this edit of {edit.name} in Neovim."
        return (
            f"The user accepted this edit of {edit.name} in Neovim, with changes of their own: the file now "
            "holds their text, not exactly what was proposed."
        )

    def kept_the_file(self, edit: Edit) -> bool:
        return self.final == edit.before


# The command an agent's hook runs (gemini's, agy's, claude's guard): our client, by absolute
# paths, isolated (-I: nothing imported from the agent's working folder). It stays at the package's
# top, where installed entries name it (docs/ARCHITECTURE.md §7).
HOOK_CLIENT = Path(__file__).resolve().parents[1] / "hook_client.py"


def client_command(agent: str, python: str = sys.executable) -> str:
    return f"{shlex.quote(python)} -I {shlex.quote(str(HOOK_CLIENT))} {agent}"


class Unreviewable(Exception):
    """The gate wants this edit reviewed but cannot show it to the user as the agent would write
    it: the edit is denied, and this text (what the model reads) says why. A gate the user
    installed never answers "no decision" for an edit it sees: that would let it land unseen."""

    def reason(self) -> str:
        return f"Neovim's review gate did not let this edit through: {self}. The file was not changed."


def edited_file(args: dict[str, Any], key: str, cwd: object = None) -> str:
    """The file an edit tool's arguments name under `key`, as an absolute path: a relative one is
    taken from the agent's working folder (`cwd`, from the hook's input), as the agent's own tool
    takes it."""
    path = args.get(key)
    if not isinstance(path, str) or not path or "\0" in path:
        raise Unreviewable(f"the tool's {key} is missing or is not a file path")
    if os.path.isabs(path):
        return path
    if isinstance(cwd, str) and os.path.isabs(cwd):
        return os.path.join(cwd, path)
    raise Unreviewable(
        f"{key} {path!r} is relative and the hook did not say the working folder: use an absolute path"
    )


def current_text(path: str, max_bytes: int) -> str | None:
    """The text an edit of `path` starts from; None for no file (the edit creates it). A file the
    review cannot show (not a plain file, over `max_bytes`, not UTF-8 text) is Unreviewable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise Unreviewable(f"{path} is a symbolic link: Neovim reviews plain files only") from exc
        raise Unreviewable(f"{path} cannot be read ({exc.strerror})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreviewable(f"{path} is not a plain file")
        if st.st_size > max_bytes:
            raise Unreviewable(_too_big(path, max_bytes))
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise Unreviewable(_too_big(path, max_bytes))
    if b"\0" in data:
        raise Unreviewable(f"{path} holds NUL bytes (binary data): Neovim reviews text only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreviewable(f"{path} is not UTF-8 text: Neovim reviews UTF-8 text only") from None


def _too_big(path: str, max_bytes: int) -> str:
    return f"{path} is over {max_bytes} bytes (setting max_file_bytes): too big to review"


def whole_write(tool: str, path: str, before: str | None, content: object) -> Edit:
    """A tool that writes the whole file: `content` over the text now ('' for a new file)."""
    if not isinstance(content, str):
        raise Unreviewable("the tool's new content is missing or is not text")
    return Edit(tool, path, before or "", content)


# How an agent's own tool finds `old` in the text and what it puts there: (text, old, new, every)
# -> the text after, and whether the agent's tool would find `old` exactly as given (when not,
# an accepted edit carries the reviewed text, so what lands is what the user saw).
Replacer = Callable[[str, str, str, bool], "tuple[str, bool] | None"]


def exact_replace(text: str, old: str, new: str, every: bool) -> tuple[str, bool] | None:
    """Replace exactly `old`: once (it must occur once), or every occurrence."""
    count = text.count(old) if old else 0
    if count == 0:
        return None
    if count > 1 and not every:
        raise Unreviewable(
            f"the text to replace occurs {count} times in the file: give more context so it occurs once, "
            "or ask for every occurrence"
        )
    return text.replace(old, new), True


def apply_replacements(
    path: str, before: str, edits: list[tuple[str, str, bool]], replace: Replacer = exact_replace
) -> tuple[str, bool]:
    """`before` after each (old, new, every occurrence) in turn, found as the agent's own tool finds
    it (`replace`); Unreviewable when one is not there."""
    after, exact = before, True
    for old, new, every in edits:
        if not old:
            raise Unreviewable("the text to replace is empty")
        done = replace(after, old, new, every)
        if done is None:
            raise Unreviewable(
                f"the text to replace is not in {os.path.basename(path)} (Neovim looked for it as the agent "
                "does): read the file again and give its text exactly"
            )
        after, exact = done[0], exact and done[1]
    return after, exact


async def json_hook(
    request: web.Request, decide: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
) -> web.Response:
    """An agent's hook posted to us (hook_client.py): its JSON object in, `decide`'s answer out.
    Every answer says it is Neovim's (GATE_HEADER): another editor's companion server, whose
    terminals set the same variables, answers without it, and hook_client then leaves the agent
    to its mode instead of denying every edit."""
    try:
        event = json.loads(await request.read())
    except (ValueError, RecursionError):  # a body nested too deep is no hook input either
        return web.json_response({"error": "the body is not JSON"}, status=400, headers=_OURS)
    if not isinstance(event, dict):
        return web.json_response({"error": "the body is not a JSON object"}, status=400, headers=_OURS)
    answer = web.json_response(await decide(event), headers=_OURS)
    # Written out here, not after the handler returns: a server that stops waits for its hook
    # handlers (Serving.stop), and an answer still in aiohttp's hands would be cut off with it.
    await answer.prepare(request)
    await answer.write_eof()
    return answer


def denied(reason: str) -> dict[str, Any]:
    """A deny as gemini's BeforeTool and agy's PreToolUse hooks both read it (hook_client.py, which
    may import nothing of ours, writes the same when Neovim cannot be reached)."""
    return {"decision": "deny", "reason": reason}


GATE_HEADER = "X-Neovim-Review-Gate"  # hook_client.py reads the same name
_OURS = {GATE_HEADER: "1"}


async def review(reviews: ReviewRegistry, edit: Edit, session_id: str | None, client_name: str) -> Decision:
    """Open `edit` as a review and wait for the user. Unreviewable when it cannot open, or when
    the review ends with no decision of the user's (the server stops)."""
    outcome: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()

    def decided(pending: PendingReview, accepted: bool, final: str | None) -> None:
        if not outcome.done():
            outcome.set_result(Decision(accepted, edit.after if final is None else final, pending.comments))

    def interrupted(why: str) -> None:
        if not outcome.done():
            outcome.set_exception(Unreviewable(why))

    try:
        # A hook's deny carries a reason: a rejection's comments go there.
        await reviews.open(
            *(edit.path, edit.after, session_id, client_name, decided),
            carries_reason=True,
            on_interrupted=interrupted,
        )
    except ReviewRefused as exc:
        raise Unreviewable(str(exc)) from None
    return await outcome
