"""One review per gemini edit when gemini asks twice: in its default mode with IDE mode on, gemini
first runs its `BeforeTool` hook (our gate, which opens the review) and then shows the same edit
through the IDE channel's `openDiff`. The second ask is answered with the user's decision on the
first, not opened again.

What pairs the two asks is the edit itself: the file and the exact text the user accepted. gemini's
openDiff carries no session of its own (its MCP session is not the hook's `session_id`), so the
session is where an accepted edit lives, not part of the match: an edit stays paired until the turn
of the gemini session that made it ends (its `AfterAgent` hook), or until the same session accepts
another text for that file. No timer decides: an openDiff that comes late in a long turn is still
answered, and one that comes after the turn is reviewed anew.
"""

from __future__ import annotations

from ...core.reviews import normalise

# More files than one turn edits; only a gemini that never ends its turn could reach it, and the
# oldest pairing goes first then.
_MOST = 256


class AcceptedEdits:
    """The edits the user accepted through gemini's gate in the current turn of each gemini
    session, by file: (path) -> (text, session)."""

    def __init__(self) -> None:
        self._edits: dict[str, tuple[str, str | None]] = {}

    def add(self, session: str | None, path: str, text: str) -> None:
        key = normalise(path)
        self._edits.pop(key, None)  # re-inserted last: the oldest is first to go
        self._edits[key] = (text, session)
        while len(self._edits) > _MOST:
            del self._edits[next(iter(self._edits))]

    def take(self, path: str, text: str) -> bool:
        """True (once) if the user accepted exactly `text` for `path` in a turn still going on."""
        key = normalise(path)
        held = self._edits.get(key)
        if held is None or held[0] != text:
            return False
        del self._edits[key]
        return True

    def turn_ended(self, session: str | None) -> None:
        """gemini session `session` ended its turn: its edits were shown once, and are done."""
        for key in [k for k, (_text, owner) in self._edits.items() if owner == session]:
            del self._edits[key]
