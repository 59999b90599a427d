"""Nothing we run imports from the repository Neovim has open (the red-team's N3).

`python -m venv` and `python -m pip` put the working directory first on sys.path: a venv.py or pip.py in
the repository ran when the user built or installed the plugin from inside it (lazy.nvim's build runs in
the user's Neovim, with its cwd)."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from gemini_companion.agents.agy import gate as agy_gate

from tests.support.helpers import Neovim, wait_for
from tests.support.install import Built, user_nvim

pytestmark = pytest.mark.slow


@pytest.mark.timeout(300)  # the shared build may run in its setup, or be waited for there
def test_the_build_run_inside_a_hostile_repository_runs_none_of_it(
    built: Built, make_nvim: Callable[..., Neovim]
) -> None:
    """The shared build (conftest.py) ran inside a hostile repository: it ran none of it."""
    assert "BUILD OK" in built.out, built.out
    assert not built.hijacked.exists(), built.hijacked.read_text()
    # Then Neovim started in that repository: its host and checkhealth import none of it either.
    nvim = user_nvim(make_nvim, built.plugin, built.data, name="hostile")
    nvim.wait_state("running")
    nvim.api.command(f"cd {built.hijacked.parent}")
    assert "cannot import the plugin" not in nvim.health()
    nvim.api.command("GeminiRestart")
    nvim.wait_state("running")
    assert not built.hijacked.exists(), built.hijacked.read_text()


def told(nvim: Neovim, text: str) -> str:
    """The first notification holding `text`, once it came."""
    return str(
        wait_for(
            lambda: next((str(n[0]) for n in nvim.notifications() if text in str(n[0])), None), what=text
        )
    )


def test_a_project_settings_file_that_is_a_link_is_refused_a_users_is_followed(
    make_nvim: Callable[..., Neovim], tmp_path: Path
) -> None:
    """A repository may plant `.claude/settings.local.json` (or `.gemini/`) as a link to anywhere:
    `:GeminiGate install <agent> project` created or merged into the file it named (the red-team's L1).
    A user's own settings file linked by a dotfiles manager is theirs: still written where it lives."""
    outside = tmp_path / "victim"
    outside.mkdir()
    existing = outside / "config.json"
    existing.write_text('{"theirs": 1}\n')
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "dark"}\n')
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").symlink_to(dotfiles)
    nvim = make_nvim(env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
    ws = nvim.workspace
    (ws / ".claude").mkdir()
    planted = ws / ".claude" / "settings.local.json"
    planted.symlink_to(outside / "autostart" / "evil.json")  # missing: it would be created
    (ws / ".gemini").symlink_to(outside)  # a linked folder: .gemini/settings.json lands outside
    (ws / ".agents").mkdir()
    (ws / ".agents" / "hooks.json").symlink_to(existing)  # existing: ours would be merged in
    nvim.wait_state("running")

    nvim.api.command("GeminiGate install claude project")
    assert f"{planted} is a symbolic link (to {outside / 'autostart' / 'evil.json'})" in told(
        nvim, "review gate for claude"
    )
    nvim.api.command("GeminiGate install gemini project")
    assert f"{ws / '.gemini'} is a symbolic link (to {outside})" in told(nvim, "review gate for gemini")
    nvim.api.command("GeminiGate install agy project")
    assert f"{ws / '.agents' / 'hooks.json'} is a symbolic link" in told(nvim, "review gate for agy")
    assert sorted(p.name for p in outside.iterdir()) == ["config.json"]
    assert existing.read_text() == '{"theirs": 1}\n'

    nvim.api.command("GeminiGate install claude user")
    assert f"installed in {home / '.claude' / 'settings.json'}" in told(nvim, "installed in")
    assert (home / ".claude" / "settings.json").is_symlink()
    assert json.loads(dotfiles.read_text())["theme"] == "dark" and "hooks" in json.loads(dotfiles.read_text())


def test_agys_mcp_entry_is_written_through_no_planted_temporary_file(
    make_nvim: Callable[..., Neovim], tmp_path: Path
) -> None:
    """agy's mcp_config.json holds the token; it was written through `<file>.tmp-<Neovim's pid>`, opened
    following links, so a link planted there took the token wherever it led (the red-team's L2)."""
    home = tmp_path / "home"
    nvim = make_nvim(env={"HOME": str(home)})
    nvim.wait_state("running")
    nvim.api.command("GeminiExtensionInstall agy")
    plugin = home / agy_gate.PLUGIN
    pid = nvim.lua("return vim.fn.getpid()")
    loot = tmp_path / "loot.txt"
    loot.write_text("")
    (plugin / f"mcp_config.json.tmp-{pid}").symlink_to(loot)
    (plugin / f"plugin.json.tmp-{pid}").symlink_to(tmp_path / "missing.txt")
    nvim.api.command("GeminiExtensionInstall! agy")
    mcp_file = plugin / "mcp_config.json"
    assert nvim.wait_discovery().token in mcp_file.read_text()
    assert stat.S_IMODE(mcp_file.stat().st_mode) == 0o600 and not mcp_file.is_symlink()
    assert loot.read_text() == "" and not (tmp_path / "missing.txt").exists()
    left = sorted(p.name for p in plugin.iterdir() if "tmp" in p.name)
    assert left == [f"mcp_config.json.tmp-{pid}", f"plugin.json.tmp-{pid}"]  # only the planted links
