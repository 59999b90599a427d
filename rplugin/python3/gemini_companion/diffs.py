"""Pending diff reviews: which session proposed which file, its limits, and telling it the outcome.

A review is matched by its normalised path (`ws/./f` and `ws//f` are one file), but each
notification echoes the client's own `filePath` string: Gemini CLI matches it exactly.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any

from .config import DiffConfig
from .sessions import ClientRegistry

log = logging.getLogger(__name__)


def normalise(path: str) -> str:
    """`path` without `.` components and repeated or trailing slashes: always the same file.

    `..` stays: after a symbolic link it need not lead where dropping a component would.
    """
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return ("/" if path.startswith("/") else "") + "/".join(parts)


class ReviewRefused(Exception):
    """openDiff may not open this review (someone else's, or over a limit); the text says why."""


@dataclass
class PendingDiff:
    key: str  # the normalised path
    path: str  # the client's own string
    session_id: str | None
    size: int  # bytes of the proposal (UTF-8)
    id: int  # tells Neovim's answers for this proposal from a later one for the same file


class DiffRegistry:
    def __init__(self, registry: ClientRegistry, limits: DiffConfig) -> None:
        self._clients = registry
        self._limits = limits
        self._pending: dict[str, PendingDiff] = {}
        self._ids = itertools.count(1)

    def get(self, path: str) -> PendingDiff | None:
        return self._pending.get(normalise(path))

    def open(self, path: str, session_id: str | None, size: int) -> tuple[PendingDiff, PendingDiff | None]:
        """Record a new proposal; return it and the one of the same session it replaces.

        Raises ReviewRefused if another session's review holds the file or a limit is reached.
        """
        key = normalise(path)
        previous = self._pending.get(key)
        if previous is not None and previous.session_id != session_id:
            raise ReviewRefused(
                f"{path} is already under review for another session; it can be proposed again "
                "once the user has accepted or rejected that review"
            )
        self._check_limits(session_id, size, replacing=previous)
        pending = PendingDiff(key, path, session_id, size, next(self._ids))
        self._pending[key] = pending
        return pending, previous

    def _check_limits(self, session_id: str | None, size: int, replacing: PendingDiff | None) -> None:
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
                    f"diff.max_pending{suffix}): the user must accept or reject some first"
                )
            total = sum(p.size for p in held) + size
            if total > bytes_limit:
                raise ReviewRefused(
                    f"proposals waiting for review would hold {total} bytes, over the {bytes_limit} allowed "
                    f"for {scope} (setting diff.max_pending_bytes{suffix}): the user must accept or reject "
                    "some first"
                )

    def forget(self, path: str, proposal_id: int | None = None) -> PendingDiff | None:
        key = normalise(path)
        pending = self._pending.get(key)
        if pending is None or (proposal_id is not None and pending.id != proposal_id):
            return None
        return self._pending.pop(key)

    def of_session(self, session_id: str) -> list[PendingDiff]:
        return [p for p in self._pending.values() if p.session_id == session_id]

    def resolve(self, path: str, proposal_id: int | None, accepted: bool, content: str | None = None) -> bool:
        """Tell the proposing client; False if that proposal is no longer pending."""
        pending = self.forget(path, proposal_id)
        if pending is None:
            return False
        self.notify(pending, accepted, content)
        return True

    def notify(self, pending: PendingDiff, accepted: bool, content: str | None = None) -> None:
        client = self._clients.get(pending.session_id) if pending.session_id else None
        if client is None:
            log.info("diff for %s resolved, but its client is gone", pending.path)
            return
        params: dict[str, Any] = {"filePath": pending.path}
        if accepted:
            params["content"] = content or ""
        method = "ide/diffAccepted" if accepted else "ide/diffRejected"
        # Not coalesced: each outcome matters (a different path is a different key anyway).
        client.send_latest(method, params, key=f"{method}\0{pending.path}")
