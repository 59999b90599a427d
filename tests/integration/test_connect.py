"""First connect: what a user sees while gemini finds (or fails to find) this Neovim.

Live client state, a dead host, and the advice of :checkhealth and :GeminiStatus (the log's
lines: tests/protocol/test_host_log.py; the names of instances and settings with a typo, the server
alone: tests/protocol/test_first_connect.py).
Gemini's own IdeClient (tests/node/ide_client.mjs) stands in for `gemini`. The tests that take
`nvim` share one Neovim, reset after each (tests/support/shared_nvim.py).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import Discovery, Neovim, record_figure, wait_for
from tests.support.node_driver import NodeDriver, ide_client_env
from tests.support.shared_nvim import fresh_editor, shared_neovim

CONTAINER_VARS = ("SSH_CONNECTION", "REMOTE_CONTAINERS", "VSCODE_REMOTE_CONTAINERS_SESSION")


def status_lines(nvim: Neovim) -> list[str]:
    lines: list[str] = nvim.lua("return require('gemini_companion.status').lines()")
    return lines


def statusline(nvim: Neovim) -> str:
    text: str = nvim.lua("return require('gemini_companion').statusline()")
    return text


def own_discovery(nvim: Neovim) -> Discovery:
    """This Neovim's file, where several Neovims share one $TMPDIR."""
    return wait_for(
        lambda: next(
            (
                Discovery(path, data["port"], data["authToken"], data["workspacePath"], data)
                for path in nvim.discovery_files()
                for data in [json.loads(path.read_text())]
                if data["workspacePath"] == str(nvim.workspace)
            ),
            None,
        ),
        what="this Neovim's discovery file",
    )


def connected_ide_client(nvim: Neovim, cwd: Path | None = None) -> NodeDriver:
    ide = NodeDriver(
        "ide_client.mjs", cwd=cwd or nvim.workspace, env=ide_client_env(nvim.env), log_dir=nvim.base
    )
    done = ide.wait_event(lambda e: e.get("event") == "connect_done", what="connect_done")
    assert done["status"] == "connected", done
    return ide


@pytest.fixture(scope="module")
def shared_nvim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neovim]:
    with shared_neovim(tmp_path_factory.mktemp("connect")) as nvim:
        yield nvim


@pytest.fixture
def nvim(shared_nvim: Neovim) -> Iterator[Neovim]:
    yield shared_nvim
    fresh_editor(shared_nvim)


def test_a_client_that_dies_leaves_status_and_status_line_within_seconds(nvim: Neovim) -> None:
    nvim.wait_discovery()
    nvim.wait_state("running")
    with connected_ide_client(nvim) as staying, connected_ide_client(nvim) as dying:
        wait_for(lambda: statusline(nvim) == "Gemini ● 2", what="both clients counted")
        assert any(line.startswith("Clients") and line.endswith(" 2") for line in status_lines(nvim))
        dying.proc.kill()  # gemini's usual end: its process goes, no DELETE of the session
        died = time.monotonic()
        wait_for(lambda: statusline(nvim) == "Gemini ● 1", timeout=20, what="the dead client forgotten")
        record_figure("connect.dead_client_forgotten_s", value=round(time.monotonic() - died, 2))
        assert any(line.startswith("Clients") and line.endswith(" 1") for line in status_lines(nvim))
        # Only the dead one went: the other, quiet all along, still works.
        assert staying.send("status")["result"]["status"] == "connected"
        assert staying.send("diffing_enabled")["result"] is True
        assert statusline(nvim) == "Gemini ● 1"
    wait_for(lambda: any("none connected" in line for line in status_lines(nvim)), what="the last one gone")


def test_a_dead_host_is_announced_once_and_shown_at_once(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua="""
        _G.__stopped = {}
        vim.api.nvim_create_autocmd('User', { pattern = 'GeminiServerStopped', callback = function(a)
          table.insert(_G.__stopped, a.data.state) end })
    """
    )
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    os.kill(disc.data["hostPid"], signal.SIGKILL)
    # Nobody looks at the status: the plugin notices by itself.
    wait_for(lambda: nvim.server_state()["state"] == "failed", what="state failed without asking")
    exited = [n for n in nvim.notifications() if "has exited" in n[0]]
    message = "the Python host has exited (killed or crashed): :GeminiRestart starts a new one"
    assert exited == [["gemini-companion: " + message, 4]]  # 4: vim.log.levels.ERROR
    assert nvim.lua("return _G.__stopped") == ["failed"]  # status line plugins refresh on this
    assert statusline(nvim) == "Gemini ✗"
    assert nvim.lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT") is None  # :terminal no longer points at it
    nvim.api.command("GeminiStatus")
    nvim.api.command("close")
    assert len([n for n in nvim.notifications() if "has exited" in n[0]]) == 1
    nvim.api.command("GeminiRestart")
    nvim.wait_discovery(exclude_port=disc.port)
    nvim.wait_state("running")


def test_status_float_shows_pending_reviews_and_esc_closes_it(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "src" / "app.py"
    target.parent.mkdir(exist_ok=True)
    target.write_text("old\n")
    nvim.lua("require('gemini_companion.review').open(...)", str(target), "new\n")
    nvim.api.command("tabnext 1")
    nvim.api.command("GeminiStatus")
    win = nvim.api.current.window
    assert nvim.api.request("nvim_win_get_config", win)["relative"] == "editor"  # the float has the focus
    shown = nvim.api.current.buffer[:]
    assert any(line.startswith("Reviews") and "1 pending" in line for line in shown), shown
    # The name gemini shows (tests/protocol/test_first_connect.py): the project's.
    assert any(line.startswith("Shown as") and line.endswith("Neovim (workspace)") for line in shown), shown
    assert "  • src/app.py" in shown
    nvim.api.input("<Esc>")
    wait_for(lambda: not win.valid, what="<Esc> closed the float")
    nvim.lua("require('gemini_companion.review').reject(...)", str(target))
    assert any(line.startswith("Reviews") and "none pending" in line for line in status_lines(nvim))


def in_container_without_hint() -> bool:
    in_container = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()
    return in_container and not any(os.environ.get(name) for name in CONTAINER_VARS)


def test_health_and_status_say_what_a_separate_terminal_needs(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gemini_home = tmp_path / "gemini-home"
    (gemini_home / ".gemini").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gemini"  # answers --version like the real one (0.61.0 prints "0.61.0")
    fake.write_text("#!/bin/sh\necho 0.61.0\n")
    fake.chmod(0o755)
    env = {"GEMINI_CLI_HOME": str(gemini_home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    nvim: Neovim = make_nvim(env=env)
    nvim.wait_state("running")

    text = nvim.health()
    section = text[text.index("Connection (what gemini will see)") :]
    assert f"gemini 0.61.0 ({fake})" in section
    assert "from a separate terminal by workspace" in section
    settings = gemini_home / ".gemini" / "settings.json"
    assert f'IDE mode is off (no `"ide": {{"enabled": true}}` in {settings})' in section
    assert "answer No" in section and "/ide enable" in section
    assert "no client is connected now" in section
    assert "no other running editor serves this workspace" in section
    assert f"export TMPDIR={nvim.tmpdir}" in section
    assert f"cd {nvim.workspace}" in section
    assert ("export REMOTE_CONTAINERS=1" in section) == in_container_without_hint()

    lines = status_lines(nvim)
    assert f"    export TMPDIR={nvim.tmpdir}" in lines
    assert ("    export REMOTE_CONTAINERS=1" in lines) == in_container_without_hint()

    # gemini's settings file may carry comments.
    settings.write_text(
        '{\n  // written by /ide enable\n  "ide": { "enabled": true }, /* more */ "x": "a//b"\n}\n'
    )
    ide = connected_ide_client(nvim)
    try:
        wait_for(lambda: statusline(nvim) == "Gemini ● 1", what="the client counted")
        section = nvim.health().split("Connection (what gemini will see)")[1]
        assert f"IDE mode is on (ide.enabled in {settings})" in section
        assert "connected now: Gemini CLI" in section
    finally:
        ide.close()

    fake.write_text("#!/bin/sh\necho 0.30.2\n")
    section = nvim.health().split("Connection (what gemini will see)")[1]
    assert "gemini 0.30.2" in section and "finds Neovim only when started in its :terminal" in section


def test_health_names_another_live_neovim_serving_the_same_workspace(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shared_tmp, project = tmp_path / "shared-tmp", tmp_path / "project"
    first: Neovim = make_nvim("a", cwd=project, tmpdir=shared_tmp)
    first_disc = own_discovery(first)
    second: Neovim = make_nvim("b", cwd=project / "sub", tmpdir=shared_tmp)
    own_discovery(second)
    second.wait_state("running")
    section = second.health().split("Connection (what gemini will see)")[1]
    pid = first_disc.path.name.split("-")[3]
    assert f"Neovim (project) (PID {pid}) also serves {project}" in section
    first.quit()
    wait_for(lambda: not first_disc.path.exists(), what="the first Neovim's file removed")
    section = second.health().split("Connection (what gemini will see)")[1]
    assert "no other running editor serves this workspace" in section
