"""Files only we may read: the Gemini discovery file, Claude's lock, the token file.

They hold the bearer token, often under a world-writable /tmp, so every directory we own the
name of must be a real directory of ours that nobody else can write, and every file is written
atomically, 0600 from its first byte. Each agent's discovery module says where and what.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class PrivateFileError(RuntimeError):
    """A private directory or file cannot be used; the message says why and what to do."""


def open_private_dir(directory: Path, *, private_levels: int, fix: str, label: str) -> int:
    """An fd of `directory`, made (0700) where missing; the caller closes it.

    Its last `private_levels` components must be real directories of ours that nobody else can
    write (a loose mode on one of ours is tightened); `fix` says what to do when one is refused,
    `label` what the directory is for (in messages).

    Works through directory fds (mkdir/open relative to the checked parent, O_NOFOLLOW), so a
    component cannot be swapped between its check and its use.
    """
    private = [directory, *directory.parents][:private_levels][::-1]
    base = private[0].parent
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise PrivateFileError(f"cannot create {label} {directory}: {exc.strerror}") from exc
    for path in private:
        fd = _enter_private(fd, path, fix, label)  # closes the parent's fd, even when it raises
    return fd


def _enter_private(parent_fd: int, path: Path, fix: str, label: str) -> int:
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
                raise PrivateFileError(
                    f"refusing the {label} {path}: it is a symbolic link "
                    f"(someone could redirect the token file); {fix}"
                ) from None
            raise PrivateFileError(f"cannot create {label} {path}: {exc.strerror}") from exc
    except OSError as exc:
        raise PrivateFileError(f"cannot create {label} {path}: {exc.strerror}") from exc
    finally:
        os.close(parent_fd)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise PrivateFileError(
                f"refusing the {label} {path}: it belongs to uid {st.st_uid}, not to you "
                f"(uid {os.getuid()}), who could read the token; {fix}"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            # Ours but open to others (made by hand, or under umask 000): make it private again
            # before anything goes in; from now on nobody else can add, swap or remove entries.
            os.fchmod(fd, 0o700)
            log.info("%s %s was mode %o: set to 0700", label, path, stat.S_IMODE(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private_json(
    directory: Path, name: str, content: Any, *, private_levels: int, fix: str, label: str
) -> Path:
    """Write `content` as JSON to `directory/name`, as write_private does."""
    return write_private(
        directory, name, json.dumps(content), private_levels=private_levels, fix=fix, label=label
    )


def write_private(
    directory: Path, name: str, text: str, *, private_levels: int, fix: str, label: str
) -> Path:
    """Write `directory/name` atomically with mode 0600 (in a directory checked by
    `open_private_dir`) and return it."""
    target = directory / name
    dir_fd = open_private_dir(directory, private_levels=private_levels, fix=fix, label=label)
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
        raise PrivateFileError(f"cannot write {target}: {exc.strerror}") from exc
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
