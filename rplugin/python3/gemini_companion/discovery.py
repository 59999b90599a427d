"""Gemini CLI discovery files: where they live, how they are written and cleaned up.

The CLI finds the IDE through `<node os.tmpdir()>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`
(docs/PROTOCOL.md §2). It skips files not owned by its uid; we also make them private (0600) because
they hold the bearer token.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FILE_RE = re.compile(r"^gemini-ide-server-(\d+)-(\d+)\.json$")
log = logging.getLogger(__name__)

IDE_INFO = {"name": "neovim", "displayName": "Neovim"}


class DiscoveryError(RuntimeError):
    """The discovery directory or file cannot be used; the message says why and what to do."""


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
    os.close(_open_private_dir(directory))


_TMPDIR_FIX = "remove it, or set $TMPDIR to a private directory for both Neovim and gemini"


def _open_private_dir(directory: Path, private_levels: int = 2, fix: str = _TMPDIR_FIX) -> int:
    """An fd of `directory` after the checks of `ensure_dir`; the caller closes it.

    Works through directory fds (mkdir/open relative to the checked parent, O_NOFOLLOW), so a
    component cannot be swapped between its check and its use.
    """
    private = [directory, *directory.parents][:private_levels][::-1]
    base = private[0].parent
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise DiscoveryError(f"cannot create discovery directory {directory}: {exc.strerror}") from exc
    for path in private:
        fd = _enter_private(fd, path, fix)  # closes the parent's fd, even when it raises
    return fd


def _enter_private(parent_fd: int, path: Path, fix: str) -> int:
    """Open `path.name` under `parent_fd` (creating it 0700) and check it; closes `parent_fd`."""
    name = path.name
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        except OSError as exc:
            st = os.lstat(name, dir_fd=parent_fd) if exc.errno in (errno.ELOOP, errno.ENOTDIR) else None
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise DiscoveryError(
                    f"refusing the discovery directory {path}: it is a symbolic link "
                    f"(someone could redirect the token file); {fix}"
                ) from None
            raise DiscoveryError(f"cannot create discovery directory {path}: {exc.strerror}") from exc
    except OSError as exc:
        raise DiscoveryError(f"cannot create discovery directory {path}: {exc.strerror}") from exc
    finally:
        os.close(parent_fd)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise DiscoveryError(
                f"refusing the discovery directory {path}: it belongs to uid {st.st_uid}, not to you "
                f"(uid {os.getuid()}), who could read the token; {fix}"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            # Ours but open to others (made by hand, or under umask 000): make it private again
            # before anything goes in; from now on nobody else can add, swap or remove entries.
            os.fchmod(fd, 0o700)
            log.info("discovery directory %s was mode %o: set to 0700", path, stat.S_IMODE(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def absolute_roots(roots: Iterable[str], cwd: str) -> list[str]:
    """Workspace roots as absolute paths, de-duplicated: `~` expanded, and a relative root taken from
    Neovim's current directory `cwd` (the host's own cwd is wherever Neovim started it)."""
    out: list[str] = []
    for root in roots:
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(root))) if root else ""
        if path and path not in out:
            out.append(path)
    return out


def workspace_path(roots: Iterable[str]) -> str:
    """Join absolute, de-duplicated roots with ':'; never emit an empty segment (docs/PROTOCOL.md §2)."""
    # A ':' inside a path would split into two bogus roots on the CLI side.
    return os.pathsep.join(p for p in absolute_roots(roots, os.getcwd()) if os.pathsep not in p)


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
    content: dict[str, Any] = {
        "port": port,
        "workspacePath": workspace,
        "authToken": token,
        "ideInfo": {**IDE_INFO, "displayName": name},
        # Not read by the CLI (extra fields are ignored): lets a later Neovim tell our stale files apart.
        "hostPid": host_pid,
    }
    return write_private_json(directory, file_name(pid, port), content)


def write_private_json(
    directory: Path, name: str, content: Any, *, private_levels: int = 2, fix: str = _TMPDIR_FIX
) -> Path:
    """Write `content` as JSON to `directory/name`, as write_private does."""
    return write_private(directory, name, json.dumps(content), private_levels=private_levels, fix=fix)


def write_private(
    directory: Path, name: str, text: str, *, private_levels: int = 2, fix: str = _TMPDIR_FIX
) -> Path:
    """Write `directory/name` atomically with mode 0600 (after `ensure_dir`'s checks on the last
    `private_levels` components of `directory`; `fix`: what to do when one is refused) and return it."""
    target = directory / name
    dir_fd = _open_private_dir(directory, private_levels, fix)
    # A name nobody can guess and O_EXCL: nothing prepared in advance can be opened instead; 0600
    # from the first byte (the umask can only take bits away; fchmod sets exactly 0600 anyway).
    tmp_name = f".{target.name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(
            tmp_name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=dir_fd,
        )
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fd, 0o600)
            fh.write(text)
        os.replace(tmp_name, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name, dir_fd=dir_fd)
        raise DiscoveryError(f"cannot write {target}: {exc.strerror}") from exc
    finally:
        os.close(dir_fd)
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
