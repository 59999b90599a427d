""":GeminiChanges: files changed on disk without a review (an agent's auto-edit or shell command),
shown as diffs with keys that put the earlier text back through an undoable write."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.gemini_ide import diff_result, ide_client, open_diff, proposed_buf
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import QF, changes_listed, snapshot_taken


def test_changes_without_a_review_are_shown_and_reverted_hunk_by_hunk(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "w.txt"
    target.write_text("one\ntwo\nthree\n")
    nvim.api.command("edit w.txt")
    nvim.api.command("nnoremap <buffer> do <Cmd>let g:mine = 1<CR>")  # the user's own mapping
    nvim.api.command("tabnew")
    target.write_text("ONE\ntwo\nTHREE\n")  # the agent's shell command
    said = "gemini-companion: w.txt changed on disk without a review (:GeminiChanges shows it)"
    wait_for(lambda: said in [n[0] for n in nvim.notifications()], what="the change noticed")
    nvim.api.command("GeminiChanges")
    assert nvim.lua(QF) == [["w.txt", 1, "+2 −2 changed without a review"]]
    assert nvim.api.current.buffer.name == str(target)
    assert nvim.api.current.buffer[:] == ["ONE", "two", "THREE"]  # the file as it is now
    assert nvim.api.current.window.cursor[0] == 1
    nvim.api.input("do")
    wait_for(lambda: target.read_text() == "one\ntwo\nTHREE\n", what="first change reverted on disk")
    nvim.api.input("u")  # an ordinary change: undo brings the agent's text back
    wait_for(lambda: nvim.api.current.buffer[:] == ["ONE", "two", "THREE"], what="undone")
    nvim.api.input("<C-r>")
    wait_for(lambda: nvim.api.current.buffer[:] == ["one", "two", "THREE"], what="redone")
    nvim.api.input("dO")
    wait_for(lambda: target.read_text() == "one\ntwo\nthree\n", what="all reverted")
    nvim.api.command("wincmd h | tabclose")  # from the "before" side
    user_map = """
    return vim.api.nvim_buf_call(vim.fn.bufnr('w.txt'), function() return vim.fn.maparg('do', 'n') end)
    """
    assert nvim.lua(user_map) == "<Cmd>let g:mine = 1<CR>"  # the user's own mapping is back
    nvim.api.command("GeminiChanges")
    assert (
        nvim.notifications()[-1][0]
        == "gemini-companion: no file changed on disk without a review (1 file watched)"
    )


def test_a_buffer_with_unsaved_edits_is_never_touched(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "w.txt"
    target.write_text("one\n")
    nvim.api.command("edit w.txt")
    nvim.api.current.buffer[:] = ["mine"]
    target.write_text("agent\n")
    tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
    nvim.api.command("GeminiChanges w.txt")
    assert "w.txt has unsaved edits: write or discard them first" in nvim.notifications()[-1][0]
    assert nvim.api.current.buffer[:] == ["mine"] and target.read_text() == "agent\n"
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs


def test_an_accepted_review_is_no_change_without_a_review(nvim: Neovim) -> None:
    target = nvim.workspace / "w.txt"
    target.write_text("one\n")
    other = nvim.workspace / "b.txt"
    other.write_text("bee\n")
    with ide_client(nvim) as ide:
        nvim.api.command("edit b.txt | edit w.txt")
        cmd = open_diff(ide, target, "ONE\n")
        proposed_buf(nvim, target)
        nvim.api.command("write")
        assert diff_result(ide, cmd)["status"] == "accepted"
        target.write_text("ONE\n")  # Gemini CLI writes what was accepted
        other.write_text("BEE\n")  # and a change without a review, noticed after it
        said = "gemini-companion: b.txt changed on disk without a review (:GeminiChanges shows it)"
        wait_for(lambda: said in [n[0] for n in nvim.notifications()], what="b.txt noticed")
        assert not [n for n in nvim.notifications() if "w.txt changed on disk" in n[0]]
        assert changes_listed(nvim) == [["b.txt", 1, "+1 −1 changed without a review"]]  # not w.txt


def test_bang_counts_changes_from_now_on(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "w.txt"
    target.write_text("one\n")
    nvim.api.command("edit w.txt")
    target.write_text("before my prompt\n")
    (nvim.workspace / "early.txt").write_text("made before my prompt\n")  # never loaded
    nvim.api.command("GeminiChanges!")  # the workspace too is taken as it is now
    marked = "gemini-companion: changes are now counted from here (2 files watched)"
    wait_for(lambda: nvim.notifications()[-1][0] == marked, what="the mark taken")
    assert changes_listed(nvim) == []
    assert (
        nvim.notifications()[-1][0]
        == "gemini-companion: no file changed on disk without a review (2 files watched)"
    )
    target.write_text("after it\n")
    (nvim.workspace / "late.txt").write_text("made after it\n")
    assert changes_listed(nvim) == [
        ["late.txt", 1, "+1 −0 new, without a review"],
        ["w.txt", 1, "+1 −1 changed without a review"],
    ]


@pytest.mark.parametrize("git", [True, False], ids=["git", "no-git"])
def test_new_and_never_loaded_files_changed_by_an_agent_are_listed_and_reverted(
    nvim: Neovim, git: bool
) -> None:
    ws = nvim.workspace
    (ws / "old.txt").write_text("one\ntwo\nthree\n")  # never loaded in a buffer
    (ws / "gone.txt").write_text("keep me\n")
    hidden = ".git/x.log" if git else ".cache/x.log"
    if git:
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        (ws / ".gitignore").write_text("*.log\n")
        (ws / "ignored.log").write_text("noise\n")
    else:
        (ws / ".cache").mkdir()
        (ws / hidden).write_text("noise\n")
    with ide_client(nvim):  # an agent session connects: the workspace is snapshotted
        snapshot_taken(nvim, 3 if git else 2)  # (git: .gitignore too)
        (ws / "old.txt").write_text("one\nTWO\nthree\n")  # the agent's write_file, or its shell
        (ws / "new.txt").write_text("a\nb\n")
        (ws / "gone.txt").unlink()
        (ws / hidden).write_text("more noise\n")
        if git:
            (ws / "ignored.log").write_text("more noise\n")
        assert changes_listed(nvim) == [
            ["gone.txt", 1, "+0 −1 deleted without a review"],
            ["new.txt", 1, "+2 −0 new, without a review"],
            ["old.txt", 2, "+1 −1 changed without a review"],
        ]
        nvim.api.command("GeminiChanges old.txt")
        assert nvim.api.current.buffer[:] == ["one", "TWO", "three"]
        assert nvim.api.current.window.cursor[0] == 2
        nvim.api.input("do")
        wait_for(lambda: (ws / "old.txt").read_text() == "one\ntwo\nthree\n", what="the earlier text written")
        nvim.api.input("u")  # an ordinary change: undo brings the agent's text back
        wait_for(lambda: nvim.api.current.buffer[:] == ["one", "TWO", "three"], what="undone")
        nvim.api.command("GeminiChanges gone.txt")  # restored only by the user's explicit action
        assert not (ws / "gone.txt").exists()
        nvim.api.input("dO")
        wait_for(
            lambda: (ws / "gone.txt").exists() and (ws / "gone.txt").read_text() == "keep me\n",
            what="restored",
        )
        nvim.api.command("GeminiChanges new.txt")
        assert nvim.api.current.buffer[:] == ["a", "b"]
        nvim.api.input("dO")  # a new file, all of it dropped: deleted once confirmed
        nvim.api.input("y")
        wait_for(lambda: not (ws / "new.txt").exists(), what="the new file deleted")
        assert nvim.notifications()[-1][0] == "gemini-companion: deleted new.txt"
        nvim.api.command("tabonly")
        nvim.api.command("write")  # old.txt as undone: the agent's text, written by the user
        assert changes_listed(nvim) == []


def test_past_the_byte_cap_files_are_tracked_by_size_and_time(make_nvim: object) -> None:
    caps = "require('gemini_companion').setup({ changes = { max_bytes = 10, max_file_bytes = 8 } })"
    nvim: Neovim = make_nvim(init_lua=caps)  # type: ignore[operator]
    ws = nvim.workspace
    (ws / "a.txt").write_text("aaaaaa\n")  # 7 bytes: kept
    (ws / "b.txt").write_text("bbbbbb\n")  # 7 more: past max_bytes, size and time only
    (ws / "c.txt").write_text("cccccccccc\n")  # past max_file_bytes
    with ide_client(nvim):
        snapshot_taken(nvim, 3)
        for name in ("a.txt", "b.txt", "c.txt"):
            (ws / name).write_text(name[0].upper() * 6 + "\n")
        assert changes_listed(nvim) == [
            ["a.txt", 1, "+1 −1 changed without a review"],
            ["b.txt", 1, "changed (not snapshotted: over changes.max_bytes)"],
            ["c.txt", 1, "changed (not snapshotted: over changes.max_file_bytes)"],
        ]
        nvim.api.command("GeminiChanges b.txt")
        assert nvim.notifications()[-1][0] == (
            "gemini-companion: b.txt: not snapshotted: over changes.max_bytes"
            " (see :help gemini-companion-changes)"
        )


def test_a_changed_file_with_unsaved_edits_is_never_touched(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "w.txt").write_text("one\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        nvim.api.command("edit w.txt")
        nvim.api.current.buffer[:] = ["mine"]
        (ws / "w.txt").write_text("agent\n")
        tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
        assert changes_listed(nvim) == [["w.txt", 1, "+1 −1 changed without a review"]]
        assert "w.txt has unsaved edits: write or discard them first" in nvim.notifications()[-1][0]
        assert nvim.api.current.buffer[:] == ["mine"] and (ws / "w.txt").read_text() == "agent\n"
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs


def test_review_keys_act_only_in_a_changes_view_and_give_the_users_mappings_back(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "w.txt"
    target.write_text("one\ntwo\n")
    nvim.api.command("edit w.txt")
    nvim.api.command("nnoremap <buffer> do <Cmd>let g:mine += 1<CR>")  # the user's own mapping
    nvim.api.command("let g:mine = 0")
    target.write_text("ONE\ntwo\n")  # the agent's shell command
    nvim.api.command("GeminiChanges w.txt")  # tab 2
    nvim.api.command("GeminiChanges w.txt")  # tab 3: a second view of the same buffer
    nvim.api.command("1tabnext")  # an ordinary window on the same buffer
    assert nvim.api.current.buffer[:] == ["ONE", "two"]
    nvim.api.input("do")
    wait_for(lambda: nvim.lua("return vim.g.mine") == 1, what="the user's own `do` ran")
    assert target.read_text() == "ONE\ntwo\n"  # no review key acted outside a view
    nvim.api.command("2tabnext | tabclose")  # the first view closes: the second keeps its keys
    nvim.api.command("2tabnext | wincmd l")
    nvim.api.input("do")
    wait_for(lambda: target.read_text() == "one\ntwo\n", what="reverted from the second view")
    nvim.api.command("tabclose")
    user_maps = """
    return vim.api.nvim_buf_call(vim.fn.bufnr('w.txt'), function()
      return { vim.fn.maparg('do', 'n'), vim.fn.maparg('dO', 'n'), vim.fn.maparg('dP', 'n') }
    end)
    """
    assert nvim.lua(user_maps) == ["<Cmd>let g:mine += 1<CR>", "", ""]  # exactly the user's own
    target.write_text("AGENT\n")
    nvim.api.command("checktime")
    nvim.api.input("do")
    wait_for(lambda: nvim.lua("return vim.g.mine") == 2, what="the user's own `do` ran again")
    nvim.api.input("dO")  # Vim's own d + O: no file written
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
    assert target.read_text() == "AGENT\n"


def test_the_users_write_to_another_file_is_the_users_own(nvim: Neovim) -> None:
    ws = nvim.workspace
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "b.txt").write_text("old b\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 2)
        nvim.api.command("edit a.txt")
        (ws / "a.txt").write_text("one\nTWO\n")  # the agent, while the buffer holds the old text
        nvim.api.command("write! b.txt")  # the user's own writes, from a.txt's buffer
        nvim.api.command("write a.bak.txt")
        assert (ws / "b.txt").read_text() == "one\ntwo\n"
        assert changes_listed(nvim) == [["a.txt", 2, "+1 −1 changed without a review"]]


def test_a_file_the_snapshot_never_listed_is_not_watched_and_never_emptied(nvim: Neovim) -> None:
    ws = nvim.workspace
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".gitignore").write_text("*.env\n")
    (ws / "secret.env").write_text("KEY=1\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 1)
        (ws / "new.txt").write_text("a\n")
        nvim.api.command("GeminiChanges secret.env")
        said = (
            "gemini-companion: secret.env: not watched (ignored by git, hidden, past changes.max_files"
            " or outside the workspace) (see :help gemini-companion-changes)"
        )
        wait_for(lambda: nvim.notifications() and nvim.notifications()[-1][0] == said, what=said)
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1
        assert (ws / "secret.env").read_text() == "KEY=1\n"
        nvim.api.command("GeminiChanges new.txt")  # new in the workspace: shown, no listing needed first
        wait_for(lambda: nvim.api.current.buffer.name == str(ws / "new.txt"), what="new.txt shown")
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2


def test_bang_forgets_files_deleted_before_the_mark(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "a.txt").write_text("one\n")
    (ws / "gone.txt").write_text("bye\n")
    with ide_client(nvim):
        snapshot_taken(nvim, 2)
        (ws / "gone.txt").unlink()
        nvim.api.command("GeminiChanges!")
        marked = "gemini-companion: changes are now counted from here (1 file watched)"
        wait_for(lambda: nvim.notifications()[-1][0] == marked, what="the mark taken")
        assert changes_listed(nvim) == []
        (ws / "gone.txt").write_text("back\n")
        assert changes_listed(nvim) == [["gone.txt", 1, "+1 −0 new, without a review"]]


def test_in_a_git_workspace_past_max_files_no_change_is_missed(nvim: Neovim) -> None:
    """Issue 29: past max_files (20 000 by default) the snapshot used to miss changes silently (at
    50 000 files, 6 of 10); with a commit, git says what differs from it, whatever the count. 25 000
    files are past the default cap and take half the time to write. The user's own uncommitted
    work at the snapshot is the baseline, not a change."""
    ws = nvim.workspace
    for folder in range(250):
        (ws / f"d{folder:03}").mkdir()
        for i in range(100):
            (ws / f"d{folder:03}" / f"f{i:02}.py").write_text(f"x = {folder * 100 + i}\n")
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "25k files"], cwd=ws, check=True)
    (ws / "d000" / "f00.py").write_text("mine = 1\n")  # the user's, before the agent came
    with ide_client(nvim):
        said = (
            "gemini-companion: no file changed on disk without a review"
            " (git compares every file with its commit; 1 file watched)"
        )
        wait_for(lambda: not changes_listed(nvim) and nvim.notifications()[-1][0] == said, what=said)
        touched = [f"d{folder:03}/f{folder % 100:02}.py" for folder in range(0, 250, 25)]  # 10, all over
        for name in touched:
            (ws / name).write_text((ws / name).read_text() + "y = 1\n")
        (ws / "d249" / "new.py").write_text("z = 1\n")
        listed = changes_listed(nvim)
        assert [row[0] for row in listed] == [*touched, "d249/new.py"]
        assert all(row[2] == "+1 −0 changed without a review" for row in listed[:-1])
        nvim.api.command(f"GeminiChanges {touched[-1]}")  # shown as a diff against the commit's text
        assert nvim.api.current.buffer[:] == ["x = 22525", "y = 1"]
        nvim.api.input("dO")
        wait_for(lambda: (ws / touched[-1]).read_text() == "x = 22525\n", what="the commit's text back")
