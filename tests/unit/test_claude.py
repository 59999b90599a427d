"""Claude Code's lock file and selection payloads (claude_lock.py, claude_ide.selection_of)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from gemini_companion.agents.claude import lock as claude_lock
from gemini_companion.agents.claude.ide import selection_of
from gemini_companion.base import private_files


def write(directory: Path, port: int = 4242) -> Path:
    pid = os.getpid()
    name = "Neovim (w)"
    return claude_lock.write_lock(
        directory, port=port, pid=pid, workspace_folders=["/w"], ide_name=name, token="t" * 43, host_pid=pid
    )


def test_lock_dir_follows_claude_config_dir_else_home() -> None:
    assert claude_lock.lock_dir({"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}) == Path("/c/ide")
    assert claude_lock.lock_dir({"HOME": "/h"}) == Path("/h/.claude/ide")


def test_lock_is_private_and_claudes_own_folder_is_left_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / ".claude"
    config.mkdir(mode=0o755)
    config.chmod(0o755)
    path = write(config / "ide")
    assert path == config / "ide" / "4242.lock"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(config.stat().st_mode) == 0o755
    data = json.loads(path.read_text())
    assert data["transport"] == "ws" and data["workspaceFolders"] == ["/w"] and data["pid"] == os.getpid()
    assert [p.name for p in path.parent.iterdir()] == ["4242.lock"]  # no temporary file left


def test_a_symlinked_ide_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "ide").symlink_to(elsewhere)
    with pytest.raises(private_files.PrivateFileError, match=r"symbolic link.*CLAUDE_CONFIG_DIR"):
        write(tmp_path / ".claude" / "ide")
    assert list(elsewhere.iterdir()) == []


def test_stale_cleanup_takes_only_our_dead_locks(tmp_path: Path) -> None:
    directory = tmp_path / "ide"
    live = write(directory, 1)
    dead = {"pid": 999_999_999, "hostPid": os.getpid(), "owner": claude_lock.OWNER}
    (directory / "2.lock").write_text(json.dumps(dead))
    (directory / "3.lock").write_text(json.dumps({**dead, "pid": os.getpid(), "hostPid": 999_999_999}))
    (directory / "4.lock").write_text(json.dumps({**dead, "owner": "someone else"}))
    (directory / "5.lock").write_text("not json")
    removed = claude_lock.remove_stale(directory)
    assert sorted(p.name for p in removed) == ["2.lock", "3.lock"]
    assert sorted(p.name for p in directory.iterdir()) == [live.name, "4.lock", "5.lock"]


def active(**fields: object) -> dict[str, object]:
    return {"openFiles": [{"path": "/w/a.py", "timestamp": 1, "isActive": True, **fields}]}


def test_selection_is_0_based_with_the_text() -> None:
    span = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 1}}
    sel = selection_of(active(selectedText="two\nt", selection=span, cursor={"line": 3, "character": 1}))
    assert sel == {
        "text": "two\nt",
        "filePath": "/w/a.py",
        "fileUrl": "file:///w/a.py",
        "selection": {**span, "isEmpty": False},
    }


def test_no_selection_is_empty_at_the_cursor_and_odd_input_is_safe() -> None:
    sel = selection_of(active(cursor={"line": 3, "character": 5}))
    assert sel is not None and sel["text"] == ""
    assert sel["selection"] == {
        "start": {"line": 2, "character": 4},
        "end": {"line": 2, "character": 4},
        "isEmpty": True,
    }
    odd = selection_of(active(selectedText="x", selection={"start": "?", "end": None}, cursor=[1]))
    assert odd is not None and odd["selection"]["isEmpty"] is True
    assert selection_of({"openFiles": "nope"}) is None
    assert selection_of(None) is None
