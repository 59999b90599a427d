"""Claude Code's discovery: the lock file `<CLAUDE_CONFIG_DIR or ~/.claude>/ide/<port>.lock`.

claude reads every lock there, deletes those whose `pid` is dead, and connects to the one whose
port is `CLAUDE_CODE_SSE_PORT` or whose `workspaceFolders` hold its working directory
(docs/PROTOCOL.md §12). Written with private_files' private, atomic write.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...base.private_files import pid_alive, remove_file, write_private_json

# Not read by claude (it ignores other fields): tells our locks from other IDEs' for the stale
# cleanup, and names the Python host, whose death leaves a lock behind while Neovim lives on.
OWNER = "gemini-companion.nvim"


def lock_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser() / "ide"
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".claude" / "ide"


def write_lock(
    directory: Path,
    *,
    port: int,
    pid: int,
    workspace_folders: Iterable[str],
    ide_name: str,
    token: str,
    host_pid: int,
) -> Path:
    """Write `<port>.lock` (the `ide` directory 0700, the file 0600, atomically) and return it."""
    content = {
        "pid": pid,
        "workspaceFolders": list(workspace_folders),  # absolute already (workspace.absolute_roots)
        "ideName": ide_name,
        "transport": "ws",
        "authToken": token,
        "owner": OWNER,
        "hostPid": host_pid,
    }
    # Only `ide` is made private: `~/.claude` is claude's own, and stays as claude made it.
    fix = "remove it (claude makes it again), or set $CLAUDE_CONFIG_DIR to a private directory"
    return write_private_json(
        directory, f"{port}.lock", content, private_levels=1, fix=fix, label="Claude Code lock directory"
    )


def remove_stale(directory: Path) -> list[Path]:
    """Delete our locks whose Neovim or Python host has died (a SIGKILL leaves them behind)."""
    removed: list[Path] = []
    try:
        entries = [entry for entry in directory.iterdir() if entry.suffix == ".lock"]
    except OSError:
        return removed
    for entry in entries:
        try:
            st = entry.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            data = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("owner") != OWNER:
            continue
        owners = [data.get("pid"), data.get("hostPid")]
        if not all(isinstance(pid, int) and pid_alive(pid) for pid in owners):
            remove_file(entry)
            removed.append(entry)
    return removed
