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

HERE = Path(__file__).parent
# aiohttp 3.14 warns, once per app, that McpRoute (an object with an async __call__) is a "bare
# function"; the host shows no warnings, and pytest makes every warning an error: that one is let be.
_AIOHTTP_ROUTE_WARNING = "ignore:Bare functions are deprecated, use async ones:DeprecationWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.filterwarnings(_AIOHTTP_ROUTE_WARNING))


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
