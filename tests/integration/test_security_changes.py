""":GeminiChanges against the agent it audits (issue 24, N7 and N8): a watched file the agent
replaced with a FIFO or with a symbolic link is listed as such, never opened, read or written
through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.gemini_ide import ide_client
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import QF, changes_listed, snapshot_taken


@pytest.mark.timeout(60)
def test_a_watched_file_replaced_by_a_fifo_never_hangs_the_view(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\n")
    with ide_client(nvim):  # a session: the workspace is snapshotted
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").unlink()
        os.mkfifo(ws / "notes.txt")  # the agent
        nvim.api.input(":GeminiChanges\r")  # typed: a hang here would block no RPC call but this one
        wait_for(lambda: nvim.api.eval("1") == 1 and nvim.lua(QF), what="the scan done")
        assert nvim.lua(QF) == [["", 0, "notes.txt: no longer a regular file (fifo)"]]
        nvim.api.command("GeminiChanges notes.txt")  # asked for by name: refused, not opened
        assert nvim.api.eval("1") == 1
        said = "gemini-companion: notes.txt is no longer a regular file (fifo): not shown"
        assert nvim.notifications()[-1][0] == said
        assert nvim.lua("return vim.fn.bufnr(...)", str(ws / "notes.txt")) == -1


def test_a_revert_never_writes_through_a_symlink_the_agent_planted(nvim: Neovim, tmp_path: Path) -> None:
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\nline 2\n")
    outside = tmp_path / "bashrc"
    outside.write_text("# the user's shell startup file\nexport PATH=$HOME/bin:$PATH\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(outside)  # the agent
        assert changes_listed(nvim) == [["", 0, f"notes.txt: now a symbolic link to {outside}"]]
        tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
        nvim.api.command("GeminiChanges notes.txt")
        said = f"gemini-companion: notes.txt is now a symbolic link to {outside}: not shown"
        assert nvim.notifications()[-1][0] == said
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs
        nvim.api.feedkeys("dO", "mx", False)  # the user: "put the earlier text back everywhere"
        assert nvim.api.eval("1") == 1
        assert outside.read_text() == "# the user's shell startup file\nexport PATH=$HOME/bin:$PATH\n"
        assert (ws / "notes.txt").is_symlink()


def test_a_revert_refuses_a_file_swapped_for_a_symlink_while_its_view_is_open(
    nvim: Neovim, tmp_path: Path
) -> None:
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\nline 2\n")
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH=$HOME/bin:$PATH\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").write_text("agent's notes\nline 2\n")
        nvim.api.command("GeminiChanges notes.txt")
        assert nvim.api.current.buffer[:] == ["agent's notes", "line 2"]
        (ws / "notes.txt").unlink()
        (ws / "notes.txt").symlink_to(outside)  # the agent, while the user looks
        nvim.api.feedkeys("dO", "mx", False)
        said = f"gemini-companion: notes.txt is now a symbolic link to {outside}: not written"
        assert nvim.notifications()[-1][0] == said
        assert outside.read_text() == "export PATH=$HOME/bin:$PATH\n"
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
        wait_for(
            lambda: any("not written" in str(m) for m, level in nvim.notifications() if level >= 3),
            what="the revert refused",
        )
        assert (elsewhere / "notes.txt").read_text() == "settings of another program\n"


def test_a_revert_never_writes_through_a_hard_link_the_agent_planted(nvim: Neovim, tmp_path: Path) -> None:
    """Red team round 3, R5: a hard link is a regular file whose real path is in the workspace, and
    Neovim writes a file with more than one name in place."""
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\nline 2\n")
    outside = tmp_path / "bashrc"
    outside.write_text("# the user's shell startup file\nexport PATH=$HOME/bin:$PATH\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").unlink()
        os.link(outside, ws / "notes.txt")  # the agent
        assert changes_listed(nvim) == [["", 0, "notes.txt: now a hard link (the file has 2 names)"]]
        tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
        nvim.api.command("GeminiChanges notes.txt")
        said = "gemini-companion: notes.txt is now a hard link (the file has 2 names): not shown"
        assert nvim.notifications()[-1][0] == said
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs
        nvim.api.feedkeys("dO", "mx", False)  # the user: "put the earlier text back everywhere"
        assert nvim.api.eval("1") == 1
        assert outside.read_text() == "# the user's shell startup file\nexport PATH=$HOME/bin:$PATH\n"


def test_a_revert_refuses_a_file_hard_linked_while_its_view_is_open(nvim: Neovim, tmp_path: Path) -> None:
    ws = nvim.workspace
    (ws / "notes.txt").write_text("my notes\nline 2\n")
    outside = tmp_path / "bashrc"
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "notes.txt").write_text("agent's notes\nline 2\n")
        nvim.api.command("GeminiChanges notes.txt")
        assert nvim.api.current.buffer[:] == ["agent's notes", "line 2"]
        os.link(ws / "notes.txt", outside)  # the agent, while the user looks: a second name
        nvim.api.feedkeys("dO", "mx", False)
        said = "gemini-companion: notes.txt is now a hard link (the file has 2 names): not written"
        assert nvim.notifications()[-1][0] == said
        assert outside.read_text() == "agent's notes\nline 2\n"
