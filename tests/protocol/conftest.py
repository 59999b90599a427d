"""The in-process tier: the real server (`lifecycle.ServerLifecycle`, its thread, loop, gateway,
HTTP edge and MCP SDK) in the pytest process, with a FakeNeovim (tests/support/fake_neovim.py)
behind its gateway: milliseconds to a served state, rather than a Neovim and a host per test. What
needs real Lua (tools, reviews, the host's life with Neovim) stays in tests/integration/.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_neovim import InProcessServer, serve


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., InProcessServer]]:
    """Factory: `make_server(config={...}, setup=fn)` starts one (each in its own directory)."""
    with contextlib.ExitStack() as stack:

        def factory(name: str = "server", **kwargs: Any) -> InProcessServer:
            return stack.enter_context(serve(tmp_path / name, **kwargs))

        yield factory


@pytest.fixture
def server(make_server: Callable[..., InProcessServer]) -> InProcessServer:
    return make_server()
