"""What :checkhealth tells a user about claude's permission mode: only a claude that asks before it
edits opens its edits as reviews. Checked with the real claude releases pinned in tests/claude_cli, the
oldest supported (which started asking) and the newest (which starts in auto mode)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_releases import NEWEST, OLDEST
from tests.support.helpers import Neovim

pytestmark = pytest.mark.real_agent


def claude_section(make_nvim: Any, tmp_path: Path, claude: Path, **kwargs: Any) -> str:
    """:checkhealth's Claude Code section for a Neovim whose PATH finds `claude` as a user's would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").symlink_to(claude)
    nvim: Neovim = make_nvim(env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, **kwargs)
    nvim.wait_state("running")
    text = nvim.health()
    return text[text.index("Claude Code (claude in :terminal)") :]


def line_with(section: str, words: str) -> str:
    return next(line for line in section.splitlines() if words in line)


def test_the_newest_claude_is_said_to_skip_reviews_in_its_auto_mode(make_nvim: Any, tmp_path: Path) -> None:
    version, claude = NEWEST
    section = claude_section(make_nvim, tmp_path, claude)
    line = line_with(section, f"claude {version} starts in auto mode")
    assert "WARNING" in line and "no review opens" in line and ":GeminiChanges" in line
    assert 'shift+tab in claude until it shows "manual mode on"' in section
    assert "answer No when claude offers to make auto mode your default" in section


def test_the_oldest_claude_asks_before_editing(make_nvim: Any, tmp_path: Path) -> None:
    version, claude = OLDEST
    section = claude_section(make_nvim, tmp_path, claude)
    line = line_with(section, f"claude {version} starts in its default mode")
    assert "OK" in line and "its edits open as reviews" in line


@pytest.mark.parametrize(
    ("mode", "reviews"), [("default", True), ("acceptEdits", False), ("bypassPermissions", False)]
)
def test_a_default_mode_in_the_users_settings_decides(
    make_nvim: Any, tmp_path: Path, mode: str, reviews: bool
) -> None:
    _, claude = NEWEST
    config = tmp_path / "nvim" / "claude"  # the CLAUDE_CONFIG_DIR the test Neovim (and its claude) use
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": mode}}))
    section = claude_section(make_nvim, tmp_path, claude)
    line = line_with(section, f'claude starts in "{mode}" mode ({config / "settings.json"})')
    if reviews:
        assert "OK" in line and "its edits open as reviews" in line
    else:
        assert "WARNING" in line and "no review opens" in line


def test_the_projects_settings_win_over_the_users(make_nvim: Any, tmp_path: Path) -> None:
    _, claude = NEWEST
    config = tmp_path / "nvim" / "claude"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "default"}}))
    project = tmp_path / "nvim" / "workspace" / ".claude"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    section = claude_section(make_nvim, tmp_path, claude)
    assert "WARNING" in line_with(
        section, f'claude starts in "acceptEdits" mode ({project / "settings.json"})'
    )


def test_settings_files_that_are_fifos_do_not_hang_checkhealth(make_nvim: Any, tmp_path: Path) -> None:
    """A hostile repository's .claude/settings.json or .gemini/settings.json may be a FIFO: reading it
    would block Neovim for good."""
    _, claude = NEWEST
    workspace = tmp_path / "nvim" / "workspace"
    for folder in (".claude", ".gemini"):
        (workspace / folder).mkdir(parents=True)
        os.mkfifo(workspace / folder / "settings.json")
    section = claude_section(make_nvim, tmp_path, claude)
    assert "starts in auto mode" in section  # the FIFO is no setting
