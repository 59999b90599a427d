"""What we change in an agent's own settings file, merged into the user's file and never touching
anything else in it: our review gate's hook entry (`:GeminiGate`: added, replaced or removed), and
gemini's `ide.enabled` before `:Gemini` starts it (`python -I agent_settings.py enable-ide FILE`,
standard library only, so Lua can run it with any Python while the host is not running).

Claude Code and Gemini CLI keep hooks the same way: `{"hooks": {"<Event>": [{"matcher": "...",
"hooks": [<hook>, ...]}, ...]}}`. Ours is found by `is_ours` (an agent's gate says how its entry
looks), so installing twice changes nothing and removing leaves the user's own hooks as they were.
The file keeps its key order (json), its mode, and where it lives when it is a symbolic link (a
dotfiles manager's; a project's may be none: `refuse_links`); it is replaced atomically, so an agent
never reads half a file, and a file that is not a JSON object is refused, never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Hook = dict[str, Any]


class SettingsError(RuntimeError):
    """The settings file cannot be read or written as it is; the message says why."""


def read(path: Path) -> dict[str, Any]:
    """The settings in `path` (a missing file is empty settings)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise SettingsError(f"{path} is not a regular file: leaving it alone")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}): fix it first, nothing was changed") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object: leaving it alone")
    return data


def installed(settings: dict[str, Any], event: str, is_ours: Callable[[Hook], bool]) -> bool:
    return any(is_ours(hook) for group in _groups(settings, event) for hook in _hooks(group))


def with_hook(
    settings: dict[str, Any],
    event: str,
    matcher: str,
    hook: Hook | list[Hook],
    is_ours: Callable[[Hook], bool],
    *,
    section: str = "hooks",
) -> bool:
    """Put `hook` (or hooks, run side by side) under `event` for `matcher` (in `section`: claude's
    and gemini's "hooks", a named set in agy's hooks.json), replacing any earlier ones of ours;
    True if anything changed."""
    before = json.dumps(settings, sort_keys=True)
    without_hook(settings, event, is_ours, section=section)
    groups = settings.setdefault(section, {}).setdefault(event, [])
    groups.append({"matcher": matcher, "hooks": hook if isinstance(hook, list) else [hook]})
    return json.dumps(settings, sort_keys=True) != before


def without_hook(
    settings: dict[str, Any], event: str, is_ours: Callable[[Hook], bool], *, section: str = "hooks"
) -> bool:
    """Remove our hooks under `event` (and what that leaves empty); True if there were any."""
    hooks = settings.get(section)
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return False
    found = False
    kept: list[Any] = []
    for group in groups:
        mine = [h for h in _hooks(group) if is_ours(h)]
        if not mine:
            kept.append(group)
            continue
        found = True
        rest = [h for h in group["hooks"] if not is_ours(h)]
        if rest:
            kept.append({**group, "hooks": rest})
    if not found:
        return False
    assert isinstance(hooks, dict)
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
        if not hooks:
            del settings[section]
    return True


def enable(settings: dict[str, Any], keys: list[str]) -> bool | None:
    """Set the boolean at `keys` (e.g. ide.enabled) to true: True if that changed the settings,
    False if it was true already, None if the user set it false (their choice stands)."""
    table = settings
    for key in keys[:-1]:
        child = table.setdefault(key, {})
        if not isinstance(child, dict):
            return None
        table = child
    value = table.get(keys[-1])
    if value is False:
        return None
    table[keys[-1]] = True
    return value is not True


def refuse_links(path: Path, project: Path) -> None:
    """Error unless `path` and each folder between `project` and it is a plain entry, no symbolic
    link: a project's settings file is the repository's to plant, and a link there (a cloned
    `.claude/settings.local.json` to anywhere) would have us create or merge into the file it names.
    A user's own settings may be links (a dotfiles manager's): this is for project scope only."""
    entry = project
    for part in path.relative_to(project).parts:
        entry = entry / part
        if entry.is_symlink():
            raise SettingsError(
                f"{entry} is a symbolic link (to {os.readlink(entry)}): a project's settings are "
                "written only into its own files; remove the link, or install for user scope"
            )


def write(path: Path, settings: dict[str, Any]) -> None:
    """Replace the file (its target, when it is a link) atomically, keeping its mode."""
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    except OSError as exc:
        raise SettingsError(f"cannot write {path}: {exc.strerror}") from exc
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fd, mode)
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise SettingsError(f"cannot write {path}: {exc.strerror}") from exc


def _groups(settings: dict[str, Any], event: str) -> list[Any]:
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return groups if isinstance(groups, list) else []


def _hooks(group: Any) -> list[Hook]:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return [h for h in hooks if isinstance(h, dict)] if isinstance(hooks, list) else []


def main(argv: list[str]) -> int:
    """`enable-ide FILE`: gemini's IDE mode on in FILE; prints one JSON line: {changed, refused, error}."""
    if len(argv) != 3 or argv[1] != "enable-ide":
        sys.stderr.write("usage: agent_settings.py enable-ide FILE\n")
        return 2
    path = Path(argv[2])
    result: dict[str, Any] = {"changed": False, "refused": False}
    try:
        settings = read(path)
        changed = enable(settings, ["ide", "enabled"])
        if changed:
            write(path, settings)
        result.update(changed=bool(changed), refused=changed is None)
    except SettingsError as exc:
        result["error"] = str(exc)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
