""":GeminiChanges: files changed on disk without a review (an agent's auto-edit or shell command),
shown as diffs with keys that put the earlier text back through an undoable write."""

from __future__ import annotations

from test_gemini_ide import diff_result, ide_client, open_diff, proposed_buf

from tests.support.helpers import Neovim, wait_for

QF = """
return vim.tbl_map(function(i) return { vim.fn.bufname(i.bufnr), i.lnum, i.text } end, vim.fn.getqflist())
"""


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
        == "gemini-companion: no file changed on disk without a review (1 watched)"
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
        nvim.api.command("GeminiChanges")
        assert nvim.lua(QF) == [["b.txt", 1, "+1 −1 changed without a review"]]  # not w.txt


def test_bang_counts_changes_from_now_on(nvim: Neovim) -> None:
    nvim.wait_state("running")
    target = nvim.workspace / "w.txt"
    target.write_text("one\n")
    nvim.api.command("edit w.txt")
    target.write_text("before my prompt\n")
    nvim.api.command("GeminiChanges!")
    assert (
        nvim.notifications()[-1][0] == "gemini-companion: changes are now counted from here (1 files watched)"
    )
    nvim.api.command("GeminiChanges")
    assert (
        nvim.notifications()[-1][0]
        == "gemini-companion: no file changed on disk without a review (1 watched)"
    )
    target.write_text("after it\n")
    nvim.api.command("GeminiChanges")
    assert nvim.lua(QF) == [["w.txt", 1, "+1 −1 changed without a review"]]
