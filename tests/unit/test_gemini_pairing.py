"""gemini asks twice for one edit in its default mode with IDE mode on (its gate hook, then openDiff):
the second ask is paired with the first by the edit, until the turn of the gemini session that made
it ends, never by a timer (agents/gemini/pairing.py)."""

from gemini_companion.agents.gemini.gate import GeminiGate
from gemini_companion.agents.gemini.pairing import AcceptedEdits


def test_an_accepted_edit_answers_the_same_edit_once_however_long_the_turn() -> None:
    edits = AcceptedEdits()
    edits.add("gemini session s1", "/w/app.py", "new\n")
    assert not edits.take("/w/app.py", "other\n")  # another text is another edit: reviewed
    assert edits.take("/w/app.py", "new\n")
    assert not edits.take("/w/app.py", "new\n")  # once


def test_the_end_of_the_turn_of_the_session_that_made_it_ends_the_pairing() -> None:
    edits = AcceptedEdits()
    edits.add("gemini session s1", "/w/a.py", "a\n")
    edits.add("gemini session s2", "/w/b.py", "b\n")
    edits.turn_ended("gemini session s2")  # another gemini's turn: s1's edit is still paired
    assert edits.take("/w/a.py", "a\n")
    assert not edits.take("/w/b.py", "b\n")
    edits.add("gemini session s1", "/w/a.py", "a2\n")
    edits.turn_ended("gemini session s1")
    assert not edits.take("/w/a.py", "a2\n")  # after the turn, an openDiff is a new review


def test_a_new_accept_of_the_same_file_replaces_the_old_one() -> None:
    edits = AcceptedEdits()
    edits.add("gemini session s1", "/w/a.py", "first\n")
    edits.add("gemini session s1", "/w/./a.py", "second\n")
    assert not edits.take("/w/a.py", "first\n")
    assert edits.take("/w/a.py", "second\n")


async def test_geminis_turn_hook_ends_its_sessions_pairings() -> None:
    edits = AcceptedEdits()
    edits.add("gemini session s1", "/w/a.py", "a\n")
    ended: list[str] = []
    gate = GeminiGate(None, lambda: "auto-modes", lambda _path: None, edits, ended.append)  # type: ignore[arg-type]
    assert await gate.decide({"hook_event_name": "AfterAgent", "session_id": "s1"}) == {}
    assert ended == ["Gemini CLI"]
    assert not edits.take("/w/a.py", "a\n")
