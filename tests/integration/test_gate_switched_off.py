"""A repository's own agent settings can switch the agent's hooks off, and with them the review gate
the user installed in their user settings (`:GeminiGate install claude|gemini`): claude's
`.claude/settings{,.local}.json` `"disableAllHooks": true`, gemini's `.gemini/settings.json`
`hooksConfig.enabled: false` or our hook's name in `hooksConfig.disabled` (the real agents then edit
unreviewed: red-team round 3, R3). :checkhealth says so in the agent's section, not "review gate
installed". (That Neovim warns once when such a real agent connects or is started from it:
test_claude_gate.py, test_gemini_gate.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_releases import NEWEST
from tests.support.helpers import Neovim, wait_for

NOT_REVIEWED = (
    "edits are not reviewed, though :GeminiGate installed the review gate; :GeminiChanges shows them after"
)


def installed(nvim: Neovim, agent: str) -> None:
    nvim.wait_state("running")
    nvim.api.command(f"GeminiGate install {agent}")
    wait_for(
        lambda: any(f"review gate for {agent} installed in" in n[0] for n in nvim.notifications()),
        what="installed",
    )


def section(health: str, title: str) -> str:
    """The lines of :checkhealth's section `title`, up to the next section's title (a line "... ~")."""
    lines = health[health.index(title) :].splitlines()
    end = next((i for i, line in enumerate(lines) if i > 0 and line.endswith(" ~")), len(lines))
    return "\n".join(lines[:end])


def gate_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "review gate" in line]


def claude_on_path(tmp_path: Path) -> dict[str, str]:
    """A user's HOME, and `claude` on the PATH (health looks at the gate when it finds claude)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").symlink_to(NEWEST.program)
    return {"HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize("file", ["settings.json", "settings.local.json"])
def test_health_says_the_projects_claude_settings_switch_the_gate_off(
    make_nvim: Any, tmp_path: Path, file: str
) -> None:
    nvim: Neovim = make_nvim(env=claude_on_path(tmp_path))
    installed(nvim, "claude")
    claude = section(nvim.health(), "Claude Code (claude in :terminal)")
    assert any("OK review gate installed" in line for line in gate_lines(claude))  # nothing switches it off

    (nvim.workspace / ".claude").mkdir()
    (nvim.workspace / ".claude" / file).write_text(json.dumps({"disableAllHooks": True}))
    claude = section(nvim.health(), "Claude Code (claude in :terminal)")
    (line,) = gate_lines(claude)
    assert line.startswith(
        f"- ❌ ERROR this project's .claude/{file} switches claude's hooks off "
        '("disableAllHooks": true): claude\'s ' + NOT_REVIEWED
    ), line
    assert "OK review gate installed" not in claude


def test_claudes_local_settings_switch_hooks_back_on(make_nvim: Any, tmp_path: Path) -> None:
    """claude merges its files, the later winning: the local file's false outweighs the shared true."""
    nvim: Neovim = make_nvim(env=claude_on_path(tmp_path))
    installed(nvim, "claude")
    (nvim.workspace / ".claude").mkdir()
    (nvim.workspace / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    (nvim.workspace / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": False}))
    claude = section(nvim.health(), "Claude Code (claude in :terminal)")
    assert any("OK review gate installed" in line for line in gate_lines(claude))


@pytest.mark.parametrize(
    ("hooks_config", "how"),
    [
        ({"enabled": False}, 'switches gemini\'s hooks off ("hooksConfig": {"enabled": false})'),
        (
            {"disabled": ["some-other-hook", "neovim-review-gate"]},
            'switches the review gate off ("hooksConfig": {"disabled": ["neovim-review-gate"]})',
        ),
    ],
)
def test_health_says_the_projects_gemini_settings_switch_the_gate_off(
    make_nvim: Any, tmp_path: Path, hooks_config: dict[str, Any], how: str
) -> None:
    nvim: Neovim = make_nvim(env={"HOME": str(tmp_path / "home")})
    installed(nvim, "gemini")
    gemini = section(nvim.health(), "Connection (what gemini will see)")
    assert any("OK review gate installed" in line for line in gate_lines(gemini))

    (nvim.workspace / ".gemini").mkdir()
    (nvim.workspace / ".gemini" / "settings.json").write_text(json.dumps({"hooksConfig": hooks_config}))
    gemini = section(nvim.health(), "Connection (what gemini will see)")
    (line,) = gate_lines(gemini)
    assert line.startswith(
        f"- ❌ ERROR this project's .gemini/settings.json {how}: gemini's {NOT_REVIEWED}"
    ), line


def test_a_disabled_list_naming_another_hook_leaves_the_gate_on(make_nvim: Any, tmp_path: Path) -> None:
    nvim: Neovim = make_nvim(env={"HOME": str(tmp_path / "home")})
    installed(nvim, "gemini")
    (nvim.workspace / ".gemini").mkdir()
    (nvim.workspace / ".gemini" / "settings.json").write_text(
        json.dumps({"hooksConfig": {"disabled": ["some-other-hook"]}})
    )
    gemini = section(nvim.health(), "Connection (what gemini will see)")
    assert any("OK review gate installed" in line for line in gate_lines(gemini))


def test_no_word_when_the_gate_is_not_installed(make_nvim: Any, tmp_path: Path) -> None:
    nvim: Neovim = make_nvim(env={"HOME": str(tmp_path / "home")})
    (nvim.workspace / ".gemini").mkdir()
    (nvim.workspace / ".gemini" / "settings.json").write_text(json.dumps({"hooksConfig": {"enabled": False}}))
    nvim.wait_state("running")
    gemini = section(nvim.health(), "Connection (what gemini will see)")
    assert "ERROR" not in "\n".join(gate_lines(gemini))
    assert "review gate not installed" in gemini


def test_health_says_a_claude_gate_installed_without_its_guard_lets_a_dropped_review_through(
    make_nvim: Any, tmp_path: Path
) -> None:
    """An install from before the guard (the mcp_tool hook alone): a claude whose connection drops
    while it waits on a review applies the edit. :checkhealth says so, and installing again mends it."""
    nvim: Neovim = make_nvim(env=claude_on_path(tmp_path))
    installed(nvim, "claude")
    told = next(n[0] for n in nvim.notifications() if "review gate for claude installed in" in n[0])
    settings_file = Path(told.split(" installed in ", 1)[1].split(": ", 1)[0])
    settings = json.loads(settings_file.read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    assert [hook["type"] for hook in group["hooks"]] == ["mcp_tool", "command"]
    group["hooks"] = group["hooks"][:1]  # as the older install wrote it
    settings_file.write_text(json.dumps(settings))
    said = gate_lines(section(nvim.health(), "Claude Code (claude in :terminal)"))
    assert any("WARNING" in line and "without its guard" in line for line in said), said
    nvim.api.command("GeminiGate install claude")
    wait_for(lambda: "hook_client.py claude" in settings_file.read_text(), what="installed again")
    said = gate_lines(section(nvim.health(), "Claude Code (claude in :terminal)"))
    assert any("OK" in line and "review gate installed" in line for line in said), said
