import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from gemini_companion.agents.gemini import discovery
from gemini_companion.base import private_files, workspace


def test_node_tmpdir_follows_node_not_python() -> None:
    assert discovery.node_tmpdir({}) == "/tmp"
    assert discovery.node_tmpdir({"TEMP": "/c", "TMP": "/b"}) == "/b"
    assert discovery.node_tmpdir({"TMPDIR": "/a/", "TMP": "/b"}) == "/a"
    assert discovery.node_tmpdir({"TMPDIR": "", "TEMP": "/c"}) == "/c"
    assert discovery.node_tmpdir({"TMPDIR": "/"}) == "/"


def test_workspace_path_has_no_empty_or_ambiguous_segments(tmp_path: Path) -> None:
    assert discovery.workspace_path([str(tmp_path), "", str(tmp_path), "/x:y", "/b"]) == f"{tmp_path}:/b"
    assert discovery.workspace_path([]) == ""


def test_written_atomically_private_and_complete(tmp_path: Path) -> None:
    directory = tmp_path / "gemini" / "ide"
    path = discovery.write_discovery(directory, pid=42, port=5555, workspace="/w", token="t", host_pid=7)
    assert path.name == "gemini-ide-server-42-5555.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {
        "port": 5555,
        "workspacePath": "/w",
        "authToken": "t",
        "ideInfo": {"name": "neovim", "displayName": "Neovim"},
        "hostPid": 7,
    }
    assert [p.name for p in directory.iterdir()] == [path.name]  # no temp file left behind


def test_unusable_directory_is_reported_clearly(tmp_path: Path) -> None:
    blocker = tmp_path / "gemini"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(private_files.PrivateFileError, match="cannot create discovery directory"):
        discovery.write_discovery(blocker / "ide", pid=1, port=2, workspace="/w", token="t", host_pid=1)


def test_only_our_dead_files_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    common = {"pid": 1, "workspace": "/w", "token": "t"}
    ours_dead = discovery.write_discovery(tmp_path, port=1, host_pid=dead.pid, **common)  # type: ignore[arg-type]
    ours_alive = discovery.write_discovery(tmp_path, port=2, host_pid=os.getpid(), **common)  # type: ignore[arg-type]
    vscode = tmp_path / f"gemini-ide-server-{dead.pid}-3.json"
    vscode.write_text(json.dumps({"port": 3, "workspacePath": "/w"}))
    garbage = tmp_path / "gemini-ide-server-1-4.json"
    garbage.write_text("{not json")
    removed = discovery.remove_stale(tmp_path)
    assert removed == [ours_dead]
    assert ours_alive.exists() and vscode.exists() and garbage.exists()


def test_workspace_roots_are_absolute_from_neovims_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    roots = workspace.absolute_roots(["/w/proj", "~/notes", "rel/dir", "", "/w/proj/", "../up"], "/w/proj")
    # `~` expanded, a relative root taken from Neovim's cwd (not the host's), the same root once.
    assert roots == ["/w/proj", "/home/u/notes", "/w/proj/rel/dir", "/w/up"]
