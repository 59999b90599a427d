from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import DEV_NVIM, ROOT, Neovim


def pytest_sessionstart(session: pytest.Session) -> None:
    if not (ROOT / ".venv" / "xdg" / "nvim-path").exists() or not DEV_NVIM.exists():
        raise pytest.UsageError("run `make test` (it bootstraps .venv and the isolated Neovim config)")


# Longest first (an install or a build, then real agents, then the other end-to-end tests): the
# workers' queues end in short tests, so no worker is left running a long one while the others idle.
_FIRST = ("slow", "real_agent", "e2e")


@pytest.hookimpl(trylast=True)  # after tests/integration/conftest.py has marked its tests e2e
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, name in enumerate(_FIRST) if item.get_closest_marker(name)), len(_FIRST))

    items.sort(key=rank)


@pytest.fixture
def make_nvim(tmp_path: Path) -> Iterator[object]:
    """Factory: start a real headless Neovim (several per test if needed); all quit at teardown."""
    started: list[Neovim] = []

    def factory(name: str = "nvim", **kwargs: object) -> Neovim:
        nvim = Neovim(tmp_path / name, **kwargs)  # type: ignore[arg-type]
        started.append(nvim)
        return nvim.start()

    yield factory
    for nvim in started:
        nvim.quit(timeout=3)


@pytest.fixture
def nvim(make_nvim: object) -> Neovim:
    return make_nvim()  # type: ignore[operator, no-any-return]
