"""The real `claude` releases pinned in tests/claude_cli: the oldest we support, the first that
starts in auto mode (2.1.331), and the newest.

Both packages install a `claude` into node_modules/.bin (the last one wins), so each release gets a
folder of its own holding a `claude` (a link to its binary), named as a user's is: the plugin knows
the agent by its program's name."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import NamedTuple

from tests.support.helpers import ROOT

MODULES = ROOT / "tests" / "claude_cli" / "node_modules"
_DEPENDENCIES = json.loads((ROOT / "tests" / "claude_cli" / "package.json").read_text())["dependencies"]


class Release(NamedTuple):
    version: str
    program: Path  # <folder of its own>/claude


def _release(version: str, binary: Path) -> Release:
    # Not inside node_modules: `npm ci` empties that folder.
    program = ROOT / ".venv" / "claude-releases" / version / "claude"
    program.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):  # another test worker made it
        program.symlink_to(binary)
    return Release(version, program)


OLDEST = _release(
    _DEPENDENCIES["@anthropic-ai/claude-code"],
    MODULES / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe",
)
FIRST_AUTO = _release(
    _DEPENDENCIES["claude-code-2.1.331"].rpartition("@")[2],
    MODULES / "claude-code-2.1.331" / "bin" / "claude.exe",
)
NEWEST = _release(
    _DEPENDENCIES["claude-code-newest"].rpartition("@")[2],
    MODULES / "claude-code-newest" / "bin" / "claude.exe",
)
