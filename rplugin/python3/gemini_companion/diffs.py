"""Pending diff reviews: which client proposed which file, and telling it the outcome.

Keyed by `filePath` exactly as received: the CLI matches notifications by that string.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .sessions import ClientRegistry

log = logging.getLogger(__name__)


@dataclass
class PendingDiff:
    path: str
    session_id: str | None


class DiffRegistry:
    def __init__(self, registry: ClientRegistry) -> None:
        self._clients = registry
        self._pending: dict[str, PendingDiff] = {}

    def __contains__(self, path: str) -> bool:
        return path in self._pending

    def paths(self) -> list[str]:
        return list(self._pending)

    def opened(self, path: str, session_id: str | None) -> PendingDiff | None:
        """Record a new diff; return the one it replaces (the caller rejects it)."""
        previous = self._pending.get(path)
        self._pending[path] = PendingDiff(path, session_id)
        return previous

    def forget(self, path: str) -> PendingDiff | None:
        return self._pending.pop(path, None)

    def of_session(self, session_id: str) -> list[str]:
        return [p.path for p in self._pending.values() if p.session_id == session_id]

    def resolve(self, path: str, accepted: bool, content: str | None = None) -> bool:
        """Tell the proposing client; False if no diff was pending for `path`."""
        pending = self._pending.pop(path, None)
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
