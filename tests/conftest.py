from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import DEV_NVIM, ROOT, Neovim


def pytest_sessionstart(session: pytest.Session) -> None:
    if not (ROOT / ".venv" / "xdg" / "nvim-path").exists() or not DEV_NVIM.exists():
        raise pytest.UsageError("run `make test` (it bootstraps .venv and the isolated Neovim config)")


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
