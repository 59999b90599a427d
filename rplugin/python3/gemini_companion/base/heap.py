"""The host's C heap, where big texts leave their memory (glibc only; elsewhere nothing is done).

A big review's text (22 MB for 1 M lines) passes through the host several times: the request body,
its JSON, msgpack both ways, the answer. glibc keeps what they free:

- a block freed raises the size from which blocks are mapped on their own to its size (up to
  32 MiB), so the next big texts come from the heap and stay there: `keep_big_blocks_apart` fixes
  that size at 1 MiB, and a big block freed goes back to the system at once;
- freed pages inside the heap stay the process's: `give_back` returns them (malloc_trim), once a
  big request or review is done.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
BIG_BLOCK_BYTES = 1 << 20


@functools.cache
def _glibc() -> Any:
    """The C library if it is glibc (it has mallopt and malloc_trim), else None (macOS, musl)."""
    try:
        libc = ctypes.CDLL(None)
        if libc.mallopt and libc.malloc_trim:
            return libc
    except (OSError, AttributeError):
        pass
    return None


def keep_big_blocks_apart() -> None:
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, BIG_BLOCK_BYTES)


def give_back() -> None:
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
