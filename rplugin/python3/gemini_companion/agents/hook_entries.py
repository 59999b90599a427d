"""`:GeminiGate install|remove <agent> [user|project]`: each agent's review gate entry in its own
settings file (the file work is agent_settings.py's; what the entry is, each agent's gate module's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import agent_settings
from .agy import gate as agy_gate
from .claude import gate as claude_gate
from .gemini import gate as gemini_gate

GATES = {"claude": claude_gate, "gemini": gemini_gate, "agy": agy_gate}
SCOPES = ("user", "project")


def command(op: str, agent: str, scope: str, cwd: str, env: Mapping[str, str]) -> tuple[str, str]:
    """Do `op` and return what to tell the user, and how loudly."""
    gate = GATES.get(agent)
    if gate is None:
        return f"no review gate for {agent!r} (gates: {', '.join(GATES)})", "error"
    if scope not in SCOPES:
        return f"scope must be user or project, not {scope!r}", "error"
    path = gate.settings_file(scope, env, cwd)
    if path is None:
        hint = getattr(gate, "NO_FILE", f":GeminiGate install {agent} project")
        return f"{agent} has no {scope} hooks file: {hint}", "error"
    try:
        if scope == "project":
            agent_settings.refuse_links(path, Path(cwd))
        settings = agent_settings.read(path)
        changed = False
        if op == "install":
            changed = _install(settings, gate)
        elif op == "remove":
            for event, _matcher, _hook in gate.ENTRIES:
                changed = (
                    agent_settings.without_hook(settings, event, gate.is_ours, section=gate.SECTION)
                    or changed
                )
        else:
            return f"unknown :GeminiGate action {op!r} (install, remove)", "error"
        if changed:
            agent_settings.write(path, settings)
    except agent_settings.SettingsError as exc:
        return f"review gate for {agent}: {exc}", "error"
    if op == "remove":
        return (
            f"review gate for {agent} removed from {path}"
            if changed
            else f"no review gate for {agent} in {path}"
        ), "info"
    done = "installed in" if changed else "already in"
    return (
        f"review gate for {agent} {done} {path}: edits {agent} makes without asking open as reviews "
        f"here (restart {agent} if it runs)",
        "info",
    )


def _install(settings: dict[str, Any], gate: Any) -> bool:
    """`gate`'s entries into `settings`; True if anything changed. Entries of one event and
    matcher are one group: its hooks run side by side."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for event, matcher, hook in gate.ENTRIES:
        groups.setdefault((event, matcher), []).append(dict(hook))
    changed = False
    for (event, matcher), hooks in groups.items():
        changed = (
            agent_settings.with_hook(settings, event, matcher, hooks, gate.is_ours, section=gate.SECTION)
            or changed
        )
    return changed
