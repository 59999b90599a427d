"""Reviews of proposed edits, whichever agent proposed them: which session proposed which file,
its limits, its life in Neovim, and telling its owner the user's decision.

A review is matched by its normalised path (`ws/./f` and `ws//f` are one file), and keeps the
client's own `filePath` string: Gemini CLI matches its answer by it exactly. A decided review is a
domain event: the registry calls the owner's `on_decided`, and each agent answers in its own way
(Gemini's `ide/diffAccepted` notification, the result of Claude's `openDiff` call).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base import heap
from ..config import ReviewConfig
from ..nvim.gateway import NeovimCallError, NeovimUnavailable, NvimGateway
from ..seam import (
    CLOSE_REVIEW,
    OPEN_REVIEW,
    RELEASE_REVIEW,
    ClosedReview,
    OpenedReview,
    ReviewDecided,
)

log = logging.getLogger(__name__)


def normalise(path: str) -> str:
    """`path` without `.` components and repeated or trailing slashes: always the same file.

    `..` stays: after a symbolic link it need not lead where dropping a component would.
    """
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return ("/" if path.startswith("/") else "") + "/".join(parts)


# A proposal at least this big (bytes) leaves memory worth giving back once it is decided.
BIG_REVIEW_BYTES = 1 << 20
# How long after the decision: the owner's answer (with the text) is sent by then.
TRIM_AFTER_S = 2.0


def _trim_later() -> None:
    try:
        asyncio.get_running_loop().call_later(TRIM_AFTER_S, heap.give_back)
    except RuntimeError:  # no loop running (a test): now
        heap.give_back()


class ReviewRefused(Exception):
    """A review may not open or close (someone else's, over a limit, not a file); the text says why."""


@dataclass
class PendingReview:
    key: str  # the normalised path
    path: str  # the client's own string
    session_id: str | None
    size: int  # bytes of the proposal (UTF-8)
    id: int  # tells Neovim's answers for this proposal from a later one for the same file
    # The owner: how the proposing agent hears the user's decision (accepted, final text).
    on_decided: Callable[[PendingReview, bool, str | None], None]
    # The owner's answer can carry a reason the model reads (a hook gate's deny): the user's
    # comments on a rejected review go there; otherwise Lua types them to the agent as its next
    # prompt (told at OPEN_REVIEW).
    carries_reason: bool = False
    comments: str | None = None  # set when the user rejected it with comments
    # The owner waits for an answer it must get even when the user never decides (a hook gate):
    # told why when the review ends without a decision (the server stops).
    on_interrupted: Callable[[str], None] | None = None


class ReviewRegistry:
    def __init__(self, gateway: NvimGateway, limits: ReviewConfig) -> None:
        self._gateway = gateway
        self._limits = limits
        self._pending: dict[str, PendingReview] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- the bookkeeping ---------------------------------------------------------------------

    def get(self, path: str) -> PendingReview | None:
        return self._pending.get(normalise(path))

    def reserve(
        self,
        path: str,
        session_id: str | None,
        size: int,
        on_decided: Callable[[PendingReview, bool, str | None], None],
        carries_reason: bool = False,
        *,
        on_interrupted: Callable[[str], None] | None = None,
    ) -> tuple[PendingReview, PendingReview | None]:
        """Record a new proposal; return it and the one of the same session it replaces.

        Raises ReviewRefused if another session's review holds the file or a limit is reached.
        """
        key = normalise(path)
        previous = self._pending.get(key)
        if previous is not None and previous.session_id != session_id:
            raise ReviewRefused(
                f"{path} is under review for another session: try again after the user has accepted or "
                "rejected that review"
            )
        self._check_limits(session_id, size, replacing=previous)
        pending = PendingReview(
            *(key, path, session_id, size, next(self._ids), on_decided, carries_reason),
            on_interrupted=on_interrupted,
        )
        self._pending[key] = pending
        return pending, previous

    def _check_limits(self, session_id: str | None, size: int, replacing: PendingReview | None) -> None:
        others = [p for p in self._pending.values() if p is not replacing]
        mine = [p for p in others if p.session_id == session_id]
        limits = self._limits
        for held, count_limit, bytes_limit, scope, suffix in (
            (
                mine,
                limits.max_pending_per_session,
                limits.max_pending_bytes_per_session,
                "this session",
                "_per_session",
            ),
            (others, limits.max_pending, limits.max_pending_bytes, "all sessions together", ""),
        ):
            if len(held) >= count_limit:
                raise ReviewRefused(
                    f"too many proposals wait for review ({count_limit} for {scope}, setting "
                    f"review.max_pending{suffix}): the user must accept or reject some first"
                )
            total = sum(p.size for p in held) + size
            if total > bytes_limit:
                raise ReviewRefused(
                    f"proposals waiting for review would hold {total} bytes, over the {bytes_limit} allowed "
                    f"for {scope} (setting review.max_pending_bytes{suffix}): the user must accept or reject "
                    "some first"
                )

    def forget(self, path: str, proposal_id: int | None = None) -> PendingReview | None:
        key = normalise(path)
        pending = self._pending.get(key)
        if pending is None or (proposal_id is not None and pending.id != proposal_id):
            return None
        return self._pending.pop(key)

    def of_session(self, session_id: str) -> list[PendingReview]:
        return [p for p in self._pending.values() if p.session_id == session_id]

    def resolve(
        self,
        path: str,
        proposal_id: int | None,
        accepted: bool,
        content: str | None = None,
        comments: str | None = None,
    ) -> bool:
        """Tell the proposal's owner; False if that proposal is no longer pending. A rejection's
        comments go with the owner's answer where it carries a reason (Lua has typed them to the
        agent otherwise: gemini's diffRejected and claude's DIFF_REJECTED say no why)."""
        pending = self.forget(path, proposal_id)
        if pending is None:
            return False
        pending.comments = comments
        pending.on_decided(pending, accepted, content)
        if pending.size >= BIG_REVIEW_BYTES:
            _trim_later()
        return True

    # -- in Neovim ---------------------------------------------------------------------------

    async def open(
        self,
        path: str,
        content: str,
        session_id: str | None,
        client_name: str,
        on_decided: Callable[[PendingReview, bool, str | None], None],
        *,
        carries_reason: bool = False,
        on_interrupted: Callable[[str], None] | None = None,
    ) -> PendingReview:
        """Show `content` as a review of `path`; returns once it is shown. The decision comes later,
        through `on_decided`. Raises ReviewRefused (nothing shown) with a sentence for the agent."""
        problem = _check_target(path, content)
        if problem:
            raise ReviewRefused(problem)
        pending, previous = self.reserve(
            path,
            session_id,
            len(content.encode("utf-8", "surrogatepass")),
            on_decided,
            carries_reason,
            on_interrupted=on_interrupted,
        )
        if previous is not None:
            previous.on_decided(previous, False, None)  # replaced: the first proposal is rejected
        try:
            # The decision (with the accepted text, 22 MB for 1 M lines) comes back on our channel
            # when there is one: its buffers are ours to give back (nvim/channel.py), pynvim's not.
            reply_to = await self._gateway.reply_channel()
            # A Neovim too busy to answer in time may run this call later: by then the agent has
            # its answer, and the review must not open (Lua compares its monotonic clock, the same
            # clock as ours).
            expires = time.monotonic_ns() + int(self._gateway.timeout_s * 1e9)
            raw = await self._gateway.exec_lua(
                OPEN_REVIEW,
                *(pending.key, content, pending.id, client_name, reply_to, expires, carries_reason),
                what="opening the review",
            )
        except (NeovimUnavailable, NeovimCallError) as exc:
            self.forget(pending.key, pending.id)
            raise ReviewRefused(f"could not open the review in Neovim: {exc}") from exc
        reply = OpenedReview.parse(raw)
        if not reply.ok:
            self.forget(pending.key, pending.id)
            raise ReviewRefused(f"could not open the review in Neovim: {reply.error or 'unknown error'}")
        return pending

    async def close(self, path: str, session_id: str | None) -> str | None:
        """The proposing agent closes its review with no decision; returns the proposal's current
        text (None: no such review, or Neovim could not say). Raises ReviewRefused for a review
        of another session."""
        pending = self.get(path)
        if pending is None:  # already decided (or never opened): nothing to close
            return None
        if pending.session_id != session_id:
            raise ReviewRefused(f"the review of {path} belongs to another session; only it can close it")
        self.forget(pending.key)
        try:
            raw = await self._gateway.exec_lua(
                CLOSE_REVIEW, pending.key, pending.id, what="closing the review"
            )
        except (NeovimUnavailable, NeovimCallError) as exc:
            log.warning("could not close the review of %s: %s", pending.key, exc)
            return None
        return ClosedReview.parse(raw).content

    async def withdraw(self, key: str, session_id: str | None, why: str) -> None:
        """The proposing agent withdrew its review (it was answered in the agent): no decision is
        sent, and Neovim keeps the proposal if the user edited it (as when a session ends)."""
        pending = self.get(key)
        if pending is not None and pending.session_id == session_id:
            self.forget(pending.key)
            await self._release(pending.key, why)

    def session_gone(self, session_id: str) -> None:
        """Nobody will answer this session's reviews any more: Neovim keeps those the user edited."""
        for pending in self.of_session(session_id):
            self.forget(pending.key)
            task = asyncio.get_running_loop().create_task(self._release(pending.key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def interrupt(self, why: str) -> int:
        """The server stops: every review whose owner must be answered (a hook gate) is answered
        now, with `why`, before its connection closes; how many were."""
        waiting = [p for p in self._pending.values() if p.on_interrupted is not None]
        for pending in waiting:
            self.forget(pending.key, pending.id)
            assert pending.on_interrupted is not None
            pending.on_interrupted(why)
        return len(waiting)

    def decided(self, event: ReviewDecided) -> None:
        """The user decided in Neovim: `:w` (accepted) or closed the view (rejected)."""
        if not self.resolve(event.path, event.id, event.action == "accepted", event.content, event.comments):
            log.debug("review event for %s with nothing pending", event.path)

    async def _release(self, key: str, why: str | None = None) -> None:
        try:
            await self._gateway.exec_lua(RELEASE_REVIEW, key, why, what="closing the review")
        except (NeovimUnavailable, NeovimCallError) as exc:
            log.warning("could not close the review of %s: %s", key, exc)


def _check_target(path: str, content: str) -> str | None:
    if not os.path.isabs(path):
        return f"filePath must be an absolute path, got {path!r}"
    if os.path.lexists(path) and not os.path.isfile(path):
        return f"{path} exists but is not a regular file"
    # A new file may be in folders that do not exist yet (the agent creates them when it writes
    # the file); the nearest existing one must be a folder.
    ancestor = os.path.dirname(path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"{ancestor} is not a directory, so {path} cannot be created"
    if "\0" in content:
        return "newContent contains NUL bytes (binary data); Neovim can only review text"
    return None
