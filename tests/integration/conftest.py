"""Every test here is end-to-end: a real headless Neovim with its Python host (the `e2e` marker, which
`make test-fast` leaves out). Plus what several modules share once per test worker: the plugin
installed as a plugin manager installs it, and its build (a minute or more: a virtualenv and pip)."""

import fcntl
import json
import os
from pathlib import Path

import pytest

from tests.support.helpers import record_figure
from tests.support.install import SYSTEM_PYTHON, Built, copy_plugin, hostile_repository, run_build

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout where a plugin manager puts it (not on 'runtimepath')."""
    return copy_plugin(tmp_path_factory.mktemp("lazy") / "gemini-companion.nvim")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Built:
    """The build step as a stock Debian/Ubuntu user runs it (the system python3 first on PATH),
    inside a repository whose venv.py, pip.py... would run if the build imported from its working
    directory (lazy.nvim's build runs in the user's Neovim, with its cwd): a clone of its own, a
    fresh data directory. Run once for all test workers (the others wait for it): the tests only
    start Neovims on it."""
    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp if worker_id == "master" else basetemp.parent  # the workers' common folder
    place, done = shared / "built", shared / "built" / "build.json"
    with (shared / "built.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            repository = place / "repository"
            repository.mkdir(parents=True)
            hostile_repository(repository)
            plugin = copy_plugin(place / "lazy" / "gemini-companion.nvim")
            data = repository / "data"
            data.mkdir()
            path = f"{SYSTEM_PYTHON.parent}:{os.environ['PATH']}"
            out, seconds = run_build(plugin, data, {"PATH": path})
            record_figure("install.build_s", value=round(seconds, 1))
            done.write_text(json.dumps({"out": out, "seconds": seconds}))
    result = json.loads(done.read_text())
    repository = place / "repository"
    return Built(
        place / "lazy" / "gemini-companion.nvim",
        repository / "data",
        result["out"],
        result["seconds"],
        repository / "HIJACKED",
    )
