"""One Neovim for a test module, for the tests that only use the editor (read its state, open
their own files, call tools): a fresh Neovim and host per test costs ~1.4 s, this a reset.

A module makes it with a module-scoped fixture and hands it out through a function-scoped one that
puts the editor back first, e.g.:

    @pytest.fixture(scope="module")
    def module_nvim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neovim]:
        with shared_neovim(tmp_path_factory.mktemp("tools"), init_lua=...) as nvim:
            yield nvim

    @pytest.fixture
    def nvim(module_nvim: Neovim) -> Neovim:
        return fresh_editor(module_nvim)

Tests that stop or restart the server, quit Neovim, or need other settings keep their own
(`make_nvim`). Whatever else a test changes in Neovim (a tool registered, a module's field), it
puts back itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.helpers import Neovim, wait_for

# Back to what a fresh Neovim shows: no review left (each rejected, as the user would), one tab, one
# window, one empty buffer (wiping a buffer forgets it: its diagnostics, its place among the recent
# files), the workspace as the current directory, no message recorded yet.
_RESET = """
local review = require('gemini_companion.review')
for _, d in ipairs(review.reviews()) do
  review.decide(d, 'rejected')
end
vim.cmd('silent! tabonly!')
vim.cmd('silent! only!')
vim.cmd('enew!')
vim.cmd('silent! %bwipeout!')
vim.diagnostic.reset()
vim.cmd.cd(vim.fn.fnameescape(...))
_G.__notifications = {}
return #review.reviews()
"""


@contextlib.contextmanager
def shared_neovim(base: Path, **kwargs: Any) -> Iterator[Neovim]:
    """A started Neovim (as `make_nvim` makes one), its server running; it quits afterwards."""
    nvim = Neovim(base, **kwargs).start()
    try:
        nvim.wait_state("running")
        yield nvim
    finally:
        nvim.quit(timeout=3)


def fresh_editor(nvim: Neovim) -> Neovim:
    """Put the shared Neovim back as a test expects to find it, its server still running."""
    nvim.api.input("<C-\\><C-N><Esc>")  # out of Visual mode, a prompt, a terminal's insert mode
    normal = {"mode": "n", "blocking": False}
    wait_for(
        lambda: nvim.api.request("nvim_get_mode") in (normal, {**normal, "mode": "nt"}), what="Normal mode"
    )
    wait_for(lambda: nvim.lua(_RESET, str(nvim.workspace)) == 0, what="no review left")
    assert nvim.api.request("nvim_get_mode") == normal
    nvim.wait_state("running")
    return nvim
