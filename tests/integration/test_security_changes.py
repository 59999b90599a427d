""":GeminiChanges audits what an agent did, so what the agent leaves behind must not turn it against the user
(the red-team's N7, N8): a watched file swapped for a FIFO hung Neovim for good when shown, and a revert
wrote through a symbolic link the agent planted, to a file outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from test_gemini_ide import ide_client
from test_review_changes import changes_listed, snapshot_taken

from tests.support.helpers import Neovim, wait_for


def warnings(nvim: Neovim) -> list[str]:
    return [str(msg) for msg, level in nvim.notifications() if level >= 3]


def test_a_file_swapped_for_a_fifo_is_listed_never_opened(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").unlink()
        os.mkfifo(ws / "notes.txt")  # the agent
        assert changes_listed(nvim) == [["notes.txt", 1, "changed (now not a regular file (fifo))"]]
        nvim.api.command("GeminiChanges notes.txt")
        assert nvim.api.call("eval", "1") == 1  # Neovim never blocked opening it
        assert any("notes.txt is not a regular file now (fifo): not shown" in w for w in warnings(nvim))
        assert nvim.lua("return vim.fn.bufloaded(...)", str(ws / "notes.txt")) == 0  # (listed: quickfix)


def test_a_revert_never_writes_through_a_link_the_agent_planted(nvim: Neovim, tmp_path: Path) -> None:
    ws = nvim.workspace
    outside = tmp_path / "bashrc"
    outside.write_text("# the user's shell startup file\n")
    (ws / "notes.txt").write_text("my notes\nline 2\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        # Swapped for a link before the view: listed as what it is, never shown with the target's text.
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(outside)
        assert changes_listed(nvim) == [["notes.txt", 1, f"changed (now a symbolic link to {outside})"]]
        nvim.api.command("GeminiChanges notes.txt")
        assert any(f"notes.txt is now a symbolic link to {outside}: not shown" in w for w in warnings(nvim))
        # Swapped while the view is open: the user's "put the earlier text back" writes nothing.
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").write_text("agent's text\n")
        nvim.api.command("GeminiChanges notes.txt")
        assert nvim.api.current.buffer[:] == ["agent's text"]
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(outside)
        nvim.api.feedkeys("dO", "mx", False)
        wait_for(lambda: any("not written" in w for w in warnings(nvim)), what="the revert refused")
        assert outside.read_text() == "# the user's shell startup file\n"
        assert (ws / "notes.txt").is_symlink()


def test_a_folder_swapped_for_a_link_out_of_the_workspace_is_not_written(
    nvim: Neovim, tmp_path: Path
) -> None:
    ws = nvim.workspace
    elsewhere = tmp_path / "config"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("settings of another program\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "notes.txt").write_text("my notes\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "sub" / "notes.txt").write_text("agent's text\n")
        nvim.api.command("GeminiChanges sub/notes.txt")
        (ws / "sub" / "notes.txt").unlink()
        (ws / "sub").rmdir()
        (ws / "sub").symlink_to(elsewhere)  # the agent
        nvim.api.feedkeys("dO", "mx", False)
        wait_for(lambda: any("not written" in w for w in warnings(nvim)), what="the revert refused")
        assert (elsewhere / "notes.txt").read_text() == "settings of another program\n"
