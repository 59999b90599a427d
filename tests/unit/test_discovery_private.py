"""The discovery directory must be ours and private (issue 15, item 1); the other-user cases
with a second uid are in tests/integration/test_security.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from gemini_companion.agents.gemini import discovery
from gemini_companion.base import private_files

COMMON = {"pid": 1, "port": 2, "workspace": "/w", "token": "secret-token", "host_pid": 3}


def test_a_symlinked_component_is_refused_and_nothing_written_through_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "gemini").symlink_to(elsewhere)
    with pytest.raises(private_files.PrivateFileError, match=r"gemini: it is a symbolic link.*\$TMPDIR"):
        discovery.write_discovery(tmp_path / "gemini" / "ide", **COMMON)  # type: ignore[arg-type]
    assert not list(elsewhere.iterdir())
    (tmp_path / "gemini").unlink()
    (tmp_path / "gemini" / "ide").mkdir(parents=True)
    (tmp_path / "gemini" / "ide").rmdir()
    (tmp_path / "gemini" / "ide").symlink_to(elsewhere)
    with pytest.raises(private_files.PrivateFileError, match="ide: it is a symbolic link"):
        discovery.write_discovery(tmp_path / "gemini" / "ide", **COMMON)  # type: ignore[arg-type]
    assert not list(elsewhere.iterdir())


def test_a_loose_directory_of_ours_is_made_private(tmp_path: Path) -> None:
    ide = tmp_path / "gemini" / "ide"
    ide.mkdir(parents=True)
    for d in (ide.parent, ide):
        d.chmod(0o777)
    path = discovery.write_discovery(ide, **COMMON)  # type: ignore[arg-type]
    assert stat.S_IMODE(ide.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(ide.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_prepared_temp_file_is_never_written_into(tmp_path: Path) -> None:
    # The old predictable name `.<target>.<pid>.tmp`, prepared by someone, is never opened.
    ide = tmp_path / "gemini" / "ide"
    ide.mkdir(parents=True, mode=0o700)
    trap = ide / f".{discovery.file_name(1, 2)}.{os.getpid()}.tmp"
    trap.write_text("")
    discovery.write_discovery(ide, **COMMON)  # type: ignore[arg-type]
    assert trap.read_text() == ""
