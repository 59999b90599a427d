"""Pending reviews: one per file whatever its spelling, owned by a session, within limits."""

import pytest
from gemini_companion.config import DiffConfig
from gemini_companion.diffs import DiffRegistry, ReviewRefused, normalise
from gemini_companion.sessions import ClientRegistry

MiB = 1 << 20


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/ws/./f", "/ws/f"),
        ("/ws//f", "/ws/f"),
        ("//ws/f", "/ws/f"),
        ("/ws/f/", "/ws/f"),
        ("/ws/./././/f", "/ws/f"),
        ("/ws/link/../f", "/ws/link/../f"),  # `..` after a symlink may lead elsewhere: kept
        ("/", "/"),
    ],
)
def test_aliases_of_a_path_are_one_key(path: str, expected: str) -> None:
    assert normalise(path) == expected


def registry(**limits: int) -> DiffRegistry:
    return DiffRegistry(ClientRegistry(), DiffConfig(**limits))  # type: ignore[arg-type]


def test_only_the_owner_replaces_and_the_clients_spelling_is_kept() -> None:
    reg = registry()
    first, previous = reg.open("/ws/./f", "A", 10)
    assert previous is None and first.path == "/ws/./f" and first.key == "/ws/f"
    with pytest.raises(ReviewRefused, match="another session"):
        reg.open("/ws//f", "B", 10)
    second, previous = reg.open("/ws//f", "A", 10)
    assert previous is first and second.id != first.id
    assert reg.get("/ws/f") is second and second.path == "/ws//f"
    assert not reg.resolve("/ws/f", first.id, accepted=True)  # a late answer for the old one
    assert reg.resolve("/ws/f", second.id, accepted=True)


def test_count_and_byte_limits_per_session_and_in_total() -> None:
    reg = registry(
        max_pending_per_session=2, max_pending=3, max_pending_bytes_per_session=MiB, max_pending_bytes=2 * MiB
    )
    reg.open("/a1", "A", 1)
    reg.open("/a2", "A", 1)
    with pytest.raises(ReviewRefused, match="max_pending_per_session"):
        reg.open("/a3", "A", 1)
    reg.open("/a2", "A", 1)  # replacing its own review needs no new room
    reg.open("/b1", "B", 1)
    with pytest.raises(ReviewRefused, match=r"diff\.max_pending\)"):
        reg.open("/c1", "C", 1)
    for key in ("/a1", "/a2", "/b1"):
        reg.forget(key)
    reg.open("/a1", "A", MiB)
    with pytest.raises(ReviewRefused, match="max_pending_bytes_per_session"):
        reg.open("/a2", "A", 1)
    reg.open("/b1", "B", MiB)
    with pytest.raises(ReviewRefused, match=r"diff\.max_pending_bytes\)"):
        reg.open("/c1", "C", 1)
