"""The workspace as agents are told it: absolute roots, the name this Neovim goes by, and the path
they speak MCP on. Light (the idle instance and the HTTP edge both import it)."""

from __future__ import annotations

import os
from collections.abc import Iterable

MCP_PATH = "/mcp"  # where clients speak MCP over HTTP


def absolute_roots(roots: Iterable[str], cwd: str) -> list[str]:
    """Workspace roots as absolute paths, de-duplicated: `~` expanded, and a relative root taken from
    Neovim's current directory `cwd` (the host's own cwd is wherever Neovim started it)."""
    out: list[str] = []
    for root in roots:
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(root))) if root else ""
        if path and path not in out:
            out.append(path)
    return out


def display_name(template: str, cwd: str) -> str:
    """The name gemini shows for this Neovim ("Connected to Neovim (api)"): with several Neovims
    open, `{project}` (the last part of the working directory) tells them apart."""
    project = os.path.basename(os.path.normpath(cwd)) or cwd
    return template.replace("{project}", project)
