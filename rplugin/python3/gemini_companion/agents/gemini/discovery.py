"""Gemini CLI discovery files: where they live, how they are written and cleaned up.

The CLI finds the IDE through `<node os.tmpdir()>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`
(docs/PROTOCOL.md §2). It skips files not owned by its uid; we also make them private (0600) because
they hold the bearer token.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...base.private_files import open_private_dir, pid_alive, remove_file, write_private_json
from ...base.workspace import absolute_roots

FILE_RE = re.compile(r"^gemini-ide-server-(\d+)-(\d+)\.json$")
log = logging.getLogger(__name__)

IDE_INFO = {"name": "neovim", "displayName": "Neovim"}


def node_tmpdir(env: Mapping[str, str]) -> str:
    """Node's `os.tmpdir()` on POSIX: TMPDIR, TMP, TEMP, else /tmp, trailing slash stripped.
    status.lua's `tmpdir()` is the Lua copy (for :checkhealth while stopped); a test compares them.

    Python's tempfile uses another order and skips unwritable dirs, so it can disagree
    with the CLI about where to look.
    """
    for name in ("TMPDIR", "TMP", "TEMP"):
        value = env.get(name)
        if value:
            break
    else:
        value = "/tmp"
    if len(value) > 1 and value.endswith("/"):
        value = value[:-1]
    return value


def discovery_dir(env: Mapping[str, str]) -> Path:
    return Path(node_tmpdir(env)) / "gemini" / "ide"


def ensure_dir(directory: Path) -> None:
    """Create `directory` (0700) if needed and check that nobody else can touch it.

    `directory` is `<tmpdir>/gemini/ide`, and `<tmpdir>` is usually the world-writable /tmp: another
    user may have created `gemini` or `ide` first, or planted a symlink there, to read the token
    we are about to write. Every component we own the name of (`gemini`, `ide`) must be a real
    directory of ours that nobody else can write; a loose mode on one of ours is tightened.
    """
    os.close(open_private_dir(directory, private_levels=2, fix=_TMPDIR_FIX, label=_LABEL))


_TMPDIR_FIX = "remove it, or set $TMPDIR to a private directory for both Neovim and gemini"
_LABEL = "discovery directory"


def workspace_path(roots: Iterable[str]) -> str:
    """Join absolute, de-duplicated roots with ':'; never emit an empty segment (docs/PROTOCOL.md §2)."""
    # A ':' inside a path would split into two bogus roots on the CLI side.
    return os.pathsep.join(p for p in absolute_roots(roots, os.getcwd()) if os.pathsep not in p)


def file_name(pid: int, port: int) -> str:
    return f"gemini-ide-server-{pid}-{port}.json"


def write_discovery(
    directory: Path,
    *,
    pid: int,
    port: int,
    workspace: str,
    token: str,
    host_pid: int,
    name: str = IDE_INFO["displayName"],
) -> Path:
    """Write the discovery file atomically with mode 0600 and return its path."""
    content: dict[str, Any] = {
        "port": port,
        "workspacePath": workspace,
        "authToken": token,
        "ideInfo": {**IDE_INFO, "displayName": name},
        # Not read by the CLI (extra fields are ignored): lets a later Neovim tell our stale files apart.
        "hostPid": host_pid,
    }
    return write_private_json(
        directory, file_name(pid, port), content, private_levels=2, fix=_TMPDIR_FIX, label=_LABEL
    )


def remove_stale(directory: Path) -> list[Path]:
    """Delete discovery files that a Neovim companion of this user left behind when it died."""
    removed: list[Path] = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return removed
    uid = os.getuid()
    for entry in entries:
        match = FILE_RE.match(entry.name)
        if not match:
            continue
        try:
            st = entry.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                continue
            data = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or (data.get("ideInfo") or {}).get("name") != IDE_INFO["name"]:
            continue  # not ours (another IDE's companion)
        host_pid = data.get("hostPid")
        owner_pid = host_pid if isinstance(host_pid, int) else int(match.group(1))
        if not pid_alive(owner_pid):
            remove_file(entry)
            removed.append(entry)
    return removed
