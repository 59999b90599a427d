"""Nothing from the open repository runs when :GeminiChanges asks git what changed (red team round 3,
R1). A repository is often someone else's (an archive, a copied tree): its .git/config names programs
git runs on its own — a clean or process filter hashing a work-tree file whose stat data does not
match the index (every file of an extracted tree), a hook when git refreshes the index, fsmonitor, an
external diff, a textconv driver, a pager, a submodule's own filter. The snapshot starts as soon as an
agent connects, with no action of the user's; docs/GIT.md lists each program and how it is kept off."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.support.gemini_ide import ide_client
from tests.support.helpers import Neovim, wait_for
from tests.support.reviewing import changes_listed

GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", "-c", "protocol.file.allow=always"]


def git(where: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=where, check=True, capture_output=True)


def program(folder: Path, name: str, ran: Path) -> str:
    """A program that leaves `ran`/`name` behind when run, then passes its input through."""
    script = folder / name
    script.write_text(f'#!/bin/sh\necho "$@" >> {ran / name}\nexec cat\n')
    script.chmod(0o755)
    return str(script)


def stat_dirty(*files: Path) -> None:
    """The same text written again a second later: the index's stat data no longer matches, as for
    every file of an extracted or copied tree, so git reads each file to compare it."""
    time.sleep(1.1)
    for f in files:
        f.write_bytes(f.read_bytes())


def hostile_repository(ws: Path, tmp_path: Path, filter_key: str) -> Path:
    """`ws` made a repository (one commit; a submodule `lib`) whose configuration runs a program
    wherever git lets it; the folder where each program run leaves its mark."""
    ran, bin_ = tmp_path / "ran", tmp_path / "bin"
    ran.mkdir()
    bin_.mkdir()
    lib = tmp_path / "lib-src"
    lib.mkdir()
    (lib / "s.txt").write_text("lib\n")
    (lib / ".gitattributes").write_text("* filter=sub\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    (ws / "a.txt").write_text("hello\n")
    (ws / "b.txt").write_text("one\ntwo\n")
    (ws / ".gitattributes").write_text("* filter=pwn diff=x\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    git(ws, "submodule", "add", "-q", str(lib), "lib")
    git(ws, "commit", "-qm", "lib")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    program(hooks, "post-index-change", ran)
    config = {
        filter_key: program(bin_, filter_key, ran),
        "core.hooksPath": str(hooks),
        "core.fsmonitor": program(bin_, "fsmonitor", ran),
        "core.pager": program(bin_, "pager", ran),
        "diff.external": program(bin_, "external-diff", ran),
        "diff.x.textconv": program(bin_, "textconv", ran),
        "diff.x.command": program(bin_, "diff-command", ran),
    }
    for key, value in config.items():
        git(ws, "config", key, value)
    git(ws / "lib", "config", "filter.sub.clean", program(bin_, "submodule-clean", ran))
    stat_dirty(ws / "a.txt", ws / "b.txt", ws / "lib" / "s.txt")
    return ran


def said(nvim: Neovim, text: str) -> None:
    wait_for(lambda: any(text == m for m, _ in nvim.notifications()), what=text)


@pytest.mark.parametrize("filter_key", ["filter.pwn.clean", "filter.pwn.process"])
def test_a_repositorys_programs_never_run_when_changes_are_looked_for(
    nvim: Neovim, tmp_path: Path, filter_key: str
) -> None:
    ws = nvim.workspace
    ran = hostile_repository(ws, tmp_path, filter_key)
    with ide_client(nvim):  # an agent connects: the workspace snapshot asks git what differs
        nothing = "gemini-companion: no file changed on disk without a review"
        watched = "(git compares every file with its commit; 0 files watched)"
        wait_for(
            lambda: not changes_listed(nvim) and nvim.notifications()[-1][0] == f"{nothing} {watched}",
            what="the snapshot taken",
        )
        assert sorted(p.name for p in ran.iterdir()) == []
        (ws / "b.txt").write_text("one\nTWO\n")  # the agent
        assert changes_listed(nvim) == [["b.txt", 2, "+1 −1 changed without a review"]]
        assert nvim.api.current.buffer[:] == ["one", "TWO"]  # shown beside the commit's text (git show)
        assert nvim.lua("return vim.api.nvim_buf_get_lines(vim.fn.winbufnr(1), 0, -1, false)") == [
            "one",
            "two",
        ]
        nvim.api.command("GeminiChanges!")
        said(
            nvim,
            "gemini-companion: changes are now counted from here"
            " (git compares every file with its commit; 1 file watched)",
        )
        assert sorted(p.name for p in ran.iterdir()) == []


def test_where_git_cannot_be_run_safely_changes_are_found_without_it(nvim: Neovim, tmp_path: Path) -> None:
    """A filter driver whose name git's `-c` cannot carry (`=` in it) cannot be turned off: git is
    not run at all, the user is told, and the workspace is walked instead."""
    ws = nvim.workspace
    ran = tmp_path / "ran"
    ran.mkdir()
    (ws / "a.txt").write_text("hello\n")
    (ws / "b.txt").write_text("one\ntwo\n")
    (ws / ".gitattributes").write_text("* filter=a=b\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    git(ws, "config", "filter.a=b.clean", program(tmp_path, "clean", ran))
    stat_dirty(ws / "a.txt", ws / "b.txt")
    why = 'git cannot be run safely here (its filter driver "a=b" cannot be turned off)'
    with ide_client(nvim):
        said(nvim, f"gemini-companion: {why}: :GeminiChanges compares the files without it")
        (ws / "b.txt").write_text("one\nTWO\n")  # the agent
        assert changes_listed(nvim) == [["b.txt", 2, "+1 −1 changed without a review"]]
        said(
            nvim,
            "gemini-companion: 1 file changed without a review: :copen lists them, :cnext shows the next"
            f"; {why}",
        )
        assert nvim.api.current.buffer[:] == ["one", "TWO"]
        assert sorted(p.name for p in ran.iterdir()) == []


def test_a_driver_the_agent_adds_after_the_snapshot_is_said(nvim: Neovim, tmp_path: Path) -> None:
    """The agent writes such a driver into .git/config after the snapshot: git is not run, and the
    count says why it found nothing."""
    ws = nvim.workspace
    ran = tmp_path / "ran"
    ran.mkdir()
    (ws / "b.txt").write_text("one\ntwo\n")
    (ws / ".gitattributes").write_text("* filter=a=b\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    with ide_client(nvim):
        nothing = "gemini-companion: no file changed on disk without a review"
        watched = "(git compares every file with its commit; 0 files watched)"
        wait_for(
            lambda: not changes_listed(nvim) and nvim.notifications()[-1][0] == f"{nothing} {watched}",
            what="the snapshot taken",
        )
        git(ws, "config", "filter.a=b.clean", program(tmp_path, "clean", ran))  # the agent
        (ws / "b.txt").write_text("one\nTWO\n")
        assert changes_listed(nvim) == []
        why = 'git cannot be run safely here (its filter driver "a=b" cannot be turned off)'
        assert nvim.notifications()[-1][0] == f"{nothing} {watched}; {why}"
        assert sorted(p.name for p in ran.iterdir()) == []
