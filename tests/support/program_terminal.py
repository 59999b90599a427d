"""A real agent program in a Neovim terminal: read its screen from the buffer, type with chansend."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.helpers import Neovim, wait_for


class ProgramTerminal:
    """`:terminal <command>` in a Neovim (`command` None: `buf` is a terminal already running)."""

    name = "the program"  # for the screen shown when a wait times out

    def __init__(self, nvim: Neovim, command: str | None = None, buf: int | None = None) -> None:
        self.nvim = nvim
        if command is not None:
            nvim.api.command(f"terminal {command}")
        self.buf = buf if buf is not None else nvim.api.current.buffer.number
        self.chan = int(nvim.lua("return vim.bo[...].channel", self.buf))
        self.pid = int(nvim.api.call("jobpid", self.chan))

    def text(self) -> str:
        lines: list[str] = self.nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", self.buf)
        return "\n".join(line.rstrip() for line in lines)

    def wait_until(self, predicate: Callable[[], object], what: str, timeout: float = 30.0) -> None:
        try:
            wait_for(predicate, timeout, interval=0.1, what=what)
        except AssertionError as exc:
            screen = "\n".join(line for line in self.text().splitlines() if line.strip())
            raise AssertionError(f"{exc}\n--- {self.name}'s screen ---\n{screen}") from None

    def wait(self, text: str, count: int = 1) -> None:
        """Wait until `text` is on the screen (or its scrollback) at least `count` times."""
        self.wait_until(lambda: self.text().count(text) >= count, repr(text))

    def keys(self, keys: str) -> None:
        self.nvim.api.call("chansend", self.chan, keys)
