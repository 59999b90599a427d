"""Every test here is end-to-end: a real headless Neovim with its Python host (the `e2e` marker, which
`make test-fast` leaves out)."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)
