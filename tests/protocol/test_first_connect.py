"""First connect, the server alone (moved from tests/integration/test_connect.py, where what the
user sees in Neovim stays): the name each Neovim's discovery file gives gemini, which one gemini's
own IdeClient (tests/node/ide_client.mjs) picks, and settings with a typo."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fake_neovim import FakeNeovim, InProcessServer
from tests.support.helpers import wait_for
from tests.support.node_driver import NodeDriver, ide_client_env


def in_project(project: Path, tmpdir: Path) -> Callable[[FakeNeovim], None]:
    """A Neovim started in `project`, with $TMPDIR `tmpdir`."""

    def setup(fake: FakeNeovim) -> None:
        project.mkdir(parents=True, exist_ok=True)
        fake.workspace, fake.tmpdir = project, tmpdir

    return setup


def test_each_neovim_is_named_after_its_project_and_gemini_finds_the_right_one(
    make_server: Callable[..., InProcessServer], tmp_path: Path
) -> None:
    shared_tmp = tmp_path / "shared-tmp"
    api = make_server("a", setup=in_project(tmp_path / "api", shared_tmp))
    web = make_server(
        "b", setup=in_project(tmp_path / "web", shared_tmp), config={"display_name": "Work nvim ({project})"}
    )
    api_file, web_file = Path(api.status()["discovery_file"]), Path(web.status()["discovery_file"])
    assert api_file.parent == web_file.parent == shared_tmp / "gemini" / "ide"
    assert json.loads(api_file.read_text())["ideInfo"] == {"name": "neovim", "displayName": "Neovim (api)"}
    assert json.loads(web_file.read_text())["ideInfo"] == {"name": "neovim", "displayName": "Work nvim (web)"}
    env = ide_client_env({**os.environ, "TMPDIR": str(shared_tmp)})
    with NodeDriver("ide_client.mjs", cwd=api.fake.workspace, env=env, log_dir=tmp_path) as ide:
        done = ide.wait_event(lambda e: e.get("event") == "connect_done", what="connect_done")
        assert done["status"] == "connected" and done["ideInfo"]["displayName"] == "Neovim (api)"
    assert api.status()["display_name"] == "Neovim (api)"  # what :GeminiStatus shows as "Shown as"
    # The name follows :cd, as gemini reads it when it starts.
    billing = tmp_path / "api" / "billing"
    billing.mkdir()
    api.fake.change_directory(billing)
    wait_for(
        lambda: json.loads(api_file.read_text())["ideInfo"]["displayName"] == "Neovim (billing)",
        what="renamed after :cd",
    )


def test_a_typo_in_a_nested_setting_is_reported_once_and_the_rest_applies(
    make_server: Callable[..., InProcessServer],
) -> None:
    settings: dict[str, Any] = {
        "review": {"layot": "horizontal", "new_tab": False},
        "context": {"debounce_ms": 120},
    }
    server = make_server(config=settings)
    notes = wait_for(
        lambda: [n for n in server.fake.notifications if "layot" in n[0]], what="the typo reported"
    )
    assert notes == [("invalid settings (defaults used):\n  unknown setting `review.layot`", "warn")]
    assert server.fake.ready is not None
    editor = server.fake.ready["settings"]  # what Lua's state.settings becomes (bridge.on_ready)
    assert editor["review"]["new_tab"] is False
    assert editor["context"]["debounce_ms"] == 120
