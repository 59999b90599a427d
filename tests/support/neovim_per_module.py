"""One Neovim (and host) shared by a test module's tests that neither stop the server nor quit
Neovim: a start costs ~1.4 s, so a module of such tests pays it once. Each test gets it back as a
user left alone would have it: `reset` after every test (tests/integration/test_gemini_ide.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.helpers import Neovim

# Normal mode, no review pending, one tab with one empty window, no other buffer, the workspace as
# the working directory, no notification heard.
_RESET = r"""
local workspace = ...
vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes([[<C-\><C-n>]], true, false, true), 'nx', false)
require('gemini_companion.review').reject_all()
vim.cmd('silent! tabonly!')
vim.cmd('silent! only!')
vim.cmd('enew!')
local keep = vim.api.nvim_get_current_buf()
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if buf ~= keep then pcall(vim.api.nvim_buf_delete, buf, { force = true }) end
end
vim.cmd.cd(vim.fn.fnameescape(workspace))
_G.__notifications = {}
return vim.api.nvim_get_mode().mode
"""


@contextlib.contextmanager
def neovim_for_module(base: Path, **kwargs: Any) -> Iterator[Neovim]:
    """A started Neovim in `base`, quit when the module's tests are done."""
    nvim = Neovim(base, **kwargs).start()
    try:
        yield nvim
    finally:
        nvim.quit(timeout=3)


def reset(nvim: Neovim) -> None:
    """Put back what a test may have changed in the shared Neovim (see _RESET)."""
    mode = nvim.lua(_RESET, str(nvim.workspace))
    assert mode == "n", mode
    assert nvim.server_state()["state"] == "running"  # a test that stops it needs its own Neovim
