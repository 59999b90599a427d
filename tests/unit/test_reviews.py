"""Pending reviews: one per file whatever its spelling, owned by a session, within limits."""

from typing import Any, cast

import pytest
from gemini_companion.config import ReviewConfig
from gemini_companion.core.reviews import PendingReview, ReviewRefused, ReviewRegistry, normalise
from gemini_companion.nvim.gateway import NvimGateway

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


def registry(**limits: int) -> ReviewRegistry:
    # The bookkeeping never calls into Neovim: no gateway.
    return ReviewRegistry(cast(NvimGateway, None), ReviewConfig(**limits))  # type: ignore[arg-type]


decisions: list[tuple[str, bool]] = []


def owner(pending: PendingReview, accepted: bool, _content: Any) -> None:
    decisions.append((pending.path, accepted))


def test_only_the_owner_replaces_and_the_clients_spelling_is_kept() -> None:
    reg = registry()
    first, previous = reg.reserve("/ws/./f", "A", 10, owner)
    assert previous is None and first.path == "/ws/./f" and first.key == "/ws/f"
    with pytest.raises(ReviewRefused, match="another session"):
        reg.reserve("/ws//f", "B", 10, owner)
    second, previous = reg.reserve("/ws//f", "A", 10, owner)
    assert previous is first and second.id != first.id
    assert reg.get("/ws/f") is second and second.path == "/ws//f"
    assert not reg.resolve("/ws/f", first.id, accepted=True)  # a late answer for the old one
    assert reg.resolve("/ws/f", second.id, accepted=True)
    assert decisions[-1] == ("/ws//f", True)  # the owner is told, with the client's own spelling


def test_count_and_byte_limits_per_session_and_in_total() -> None:
    reg = registry(
        max_pending_per_session=2, max_pending=3, max_pending_bytes_per_session=MiB, max_pending_bytes=2 * MiB
    )
    reg.reserve("/a1", "A", 1, owner)
    reg.reserve("/a2", "A", 1, owner)
    with pytest.raises(ReviewRefused, match="max_pending_per_session"):
        reg.reserve("/a3", "A", 1, owner)
    reg.reserve("/a2", "A", 1, owner)  # replacing its own review needs no new room
    reg.reserve("/b1", "B", 1, owner)
    with pytest.raises(ReviewRefused, match=r"review\.max_pending\)"):
        reg.reserve("/c1", "C", 1, owner)
    for key in ("/a1", "/a2", "/b1"):
        reg.forget(key)
    reg.reserve("/a1", "A", MiB, owner)
    with pytest.raises(ReviewRefused, match="max_pending_bytes_per_session"):
        reg.reserve("/a2", "A", 1, owner)
    reg.reserve("/b1", "B", MiB, owner)
    with pytest.raises(ReviewRefused, match=r"review\.max_pending_bytes\)"):
        reg.reserve("/c1", "C", 1, owner)


def test_a_big_decided_review_gives_its_memory_back_and_a_small_one_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gemini_companion.core import reviews

    trims: list[bool] = []
    monkeypatch.setattr(reviews.heap, "give_back", lambda: trims.append(True))
    reg = registry(max_pending_bytes_per_session=64 * MiB)
    small, _ = reg.reserve("/small", "A", 10, owner)
    assert reg.resolve("/small", small.id, accepted=False)
    assert trims == []
    big, _ = reg.reserve("/big", "A", reviews.BIG_REVIEW_BYTES, owner)
    assert reg.resolve("/big", big.id, accepted=True, content="x")
    assert trims == [True]  # no loop running here: at once


def test_the_heap_calls_run_anywhere() -> None:
    from gemini_companion.base import heap

    heap.keep_big_blocks_apart()  # glibc's mallopt and malloc_trim, or nothing where there are none
    heap.give_back()
