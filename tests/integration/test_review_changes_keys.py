""":GeminiChanges as a Vim user drives it (issue 25): the quickfix list it fills, one-key answers."""

from __future__ import annotations

import pytest
from test_gemini_ide import ide_client
from test_review_changes import snapshot_taken

from tests.support.helpers import Neovim, wait_for


@pytest.mark.parametrize(("key", "deleted"), [("y", True), ("n", False), ("<Esc>", False)])
def test_deleting_a_new_file_takes_one_key_and_swallows_no_command(
    nvim: Neovim, key: str, deleted: bool
) -> None:
    ws = nvim.workspace
    (ws / "old.txt").write_text("one\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "new.txt").write_text("a\nb\n")  # the agent
        nvim.api.command("GeminiChanges new.txt")
        wait_for(lambda: nvim.api.current.buffer[:] == ["a", "b"], what="the new file shown")
        nvim.api.input("dO" + key)  # one key answers
        nvim.api.input(":let g:next = 1\r")  # the user's next command runs, not taken as the answer
        wait_for(lambda: nvim.api.eval("get(g:, 'next', 0)") == 1, what="the next command run")
        assert (ws / "new.txt").exists() is not deleted
