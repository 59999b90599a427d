"""Gemini CLI discovery files: where they live, how they are written and cleaned up.

The CLI finds the IDE through `<node os.tmpdir()>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`
(spec §1). It skips files not owned by its uid; we also make them private (0600) because
they hold the bearer token.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FILE_RE = re.compile(r"^gemini-ide-server-(\d+)-(\d+)\.json$")
IDE_INFO = {"name": "neovim", "displayName": "Neovim"}


class DiscoveryError(RuntimeError):
    """The discovery directory or file cannot be used; the message says why and what to do."""


def node_tmpdir(env: Mapping[str, str]) -> str:
    """Node's `os.tmpdir()` on POSIX: TMPDIR, TMP, TEMP, else /tmp, trailing slash stripped.

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
    """Create `directory` (0700) if needed and check that this user can write into it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise DiscoveryError(f"cannot create discovery directory {directory}: {exc.strerror}") from exc
    if not os.access(directory, os.W_OK | os.X_OK):
        try:
            owner = directory.stat().st_uid
        except OSError:
            owner = -1
        hint = (
            f" (owned by uid {owner}; set $TMPDIR to a private directory for Neovim and gemini)"
            if owner not in (-1, os.getuid())
            else ""
        )
        raise DiscoveryError(f"discovery directory {directory} is not writable by this user{hint}")


def workspace_path(roots: Iterable[str]) -> str:
    """Join absolute, de-duplicated roots with ':'; never emit an empty segment (spec §1.3)."""
    seen: list[str] = []
    for root in roots:
        if not root:
            continue
        path = os.path.abspath(os.path.expanduser(root))
        # A ':' inside a path would split into two bogus roots on the CLI side.
        if os.pathsep in path or path in seen:
            continue
        seen.append(path)
    return os.pathsep.join(seen)


def display_name(template: str, cwd: str) -> str:
    """The name gemini shows for this Neovim ("Connected to Neovim (api)"): with several Neovims
    open, `{project}` (the last part of the working directory) tells them apart."""
    project = os.path.basename(os.path.normpath(cwd)) or cwd
    return template.replace("{project}", project)


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
    ensure_dir(directory)
    content: dict[str, Any] = {
        "port": port,
        "workspacePath": workspace,
        "authToken": token,
        "ideInfo": {**IDE_INFO, "displayName": name},
        # Not read by the CLI (extra fields are ignored): lets a later Neovim tell our stale files apart.
        "hostPid": host_pid,
    }
    target = directory / file_name(pid, port)
    tmp = directory / f".{target.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(content, fh)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise DiscoveryError(f"cannot write discovery file {target}: {exc.strerror}") from exc
    return target


def remove_file(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(FileNotFoundError, OSError):
            path.unlink()


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    # A killed process whose parent died too may linger unreaped (e.g. in containers whose
    # PID 1 does not reap): it answers kill(pid, 0) but serves nothing.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


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
