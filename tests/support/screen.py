"""A real screen on a running test Neovim: `nvim --remote-ui` in a tmux pane of its own, read with
capture-pane as a user reads it. With GEMINI_COMPANION_PICTURES set to a folder (`make pictures`),
`picture()` also saves what the screen shows as an SVG there: the README's pictures are taken from
real runs, not drawn."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.helpers import Neovim


class RemoteScreen:
    def __init__(self, nvim: Neovim, width: int = 110, height: int = 30) -> None:
        tmux = shutil.which("tmux")
        assert tmux, "tmux is needed (Debian package tmux)"
        self.tmux = [tmux, "-S", str(nvim.base / "screen.sock")]
        # The same Neovim build, as a UI of the test's Neovim (its --listen socket).
        ui = f"{nvim.nvim_cmd[0]} --remote-ui --server {nvim.sock}"
        size = ["-x", str(width), "-y", str(height)]
        subprocess.run([*self.tmux, "new-session", "-d", *size, ui], check=True, env=nvim.env)

    def text(self) -> str:
        return self._capture()

    def _capture(self, *flags: str) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", *flags], capture_output=True, text=True, check=True
        ).stdout

    @property
    def taking_pictures(self) -> bool:
        return bool(os.environ.get("GEMINI_COMPANION_PICTURES"))

    def picture(self, name: str, title: str) -> None:
        """Save the screen as `<name>.svg` in GEMINI_COMPANION_PICTURES (unset: nothing)."""
        folder = os.environ.get("GEMINI_COMPANION_PICTURES")
        if not folder:
            return
        from rich.console import Console  # a dev dependency, needed only here
        from rich.text import Text

        lines = self._capture("-e").rstrip("\n").split("\n")
        width = max(len(line) for line in self.text().splitlines())
        console = Console(record=True, width=width, file=io.StringIO())
        for line in lines:
            console.print(Text.from_ansi(line), no_wrap=True, crop=True)
        Path(folder).mkdir(parents=True, exist_ok=True)
        console.save_svg(str(Path(folder) / f"{name}.svg"), title=title)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], check=False)
