"""Claude Code: its IDE protocol over our WebSocket (tools, lock file, selection notifications)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...base.private_files import PrivateFileError, remove_file
from .. import Agent
from . import lock

if TYPE_CHECKING:
    from ... import seam
    from ...instance import ServerInstance
    from ...serving import Serving
    from .. import Handler
    from .ide import ClaudeIde

log = logging.getLogger(__name__)


class Claude(Agent):
    """Served only while `claude.enabled`: its lock file, WebSocket, gate and at-mentions."""

    def __init__(self, instance: ServerInstance) -> None:
        self._instance = instance
        self.enabled = instance.config.claude.enabled
        self.lock_path: Path | None = None
        self.error: str | None = None
        self._ide: ClaudeIde | None = None

    def announce(self) -> None:
        if self.enabled:
            problem = self._write_lock()
            if problem is not None and problem != self.error:
                self._instance.report_to_user(problem, "error")
            self.error = problem

    def _write_lock(self) -> str | None:
        """(Re)write Claude Code's lock file; returns the problem instead of raising."""
        instance = self._instance
        directory = lock.lock_dir(instance.params.env)
        try:
            removed = lock.remove_stale(directory)
            if removed:
                log.info("removed %d stale Claude Code lock file(s)", len(removed))
            self.lock_path = lock.write_lock(
                directory,
                port=instance.port,
                pid=instance.params.nvim_pid,
                workspace_folders=instance.workspace_roots(),
                ide_name=instance.display_name,
                token=instance.token,
                host_pid=os.getpid(),
            )
        except PrivateFileError as exc:
            log.error("Claude Code lock file: %s", exc)
            return f"Claude Code lock file: {exc}"
        return None

    def withdraw(self) -> None:
        remove_file(self.lock_path)

    def describe(self, info: dict[str, Any]) -> None:
        if self.enabled:
            info["claude_lock_file"] = str(self.lock_path) if self.lock_path else None
            info["claude_error"] = self.error

    def ready(self, details: dict[str, Any]) -> None:
        # CLAUDE_CODE_SSE_PORT for Neovim's children: claude in :terminal connects by itself.
        details["claude_port"] = self._instance.port if self.enabled else None

    def serve(self, serving: Serving) -> None:
        if not self.enabled:
            return
        from .ide import ClaudeIde

        instance, config = self._instance, self._instance.config
        self._ide = ide = ClaudeIde(
            gateway=instance.gateway,
            registry=serving.registry,
            catalog=serving.catalog,
            reviews=serving.reviews,
            gate=config.review.gate,
            max_file_bytes=config.max_file_bytes,
            max_message_bytes=config.max_body_bytes,
            version=instance.params.version,
            workspace_roots=instance.workspace_roots,
            report=instance.report_to_user,
            turn_ended=instance.turn_ended,
        )
        ide.route.too_large = lambda session_id: serving.refusals.refused(
            serving.registry.name_of(session_id), None
        )

    def hooks(self) -> Mapping[str, Handler]:
        from .gate import ROUTE

        return {ROUTE: self._ide.gate.handle} if self._ide is not None else {}

    def websocket(self) -> Handler | None:
        return self._ide.route if self._ide is not None else None

    def on_event(self, event: seam.Event) -> None:
        from ... import seam

        if self._ide is None:
            return
        if isinstance(event, seam.ContextChanged):
            self._ide.on_context(event.context)
        elif isinstance(event, seam.AtMentioned):
            self._ide.at_mentioned(event.path, event.line_start, event.line_end)

    async def stop(self, *, farewell_s: float, timeout_s: float) -> None:
        if self._ide is not None:  # WebSockets outlive the HTTP runner's cleanup otherwise
            await self._ide.route.close_all(timeout_s)


# Its settings files, which decide whether its hooks run (agents.holds_agent_settings: an edit of
# one is always reviewed): a regular expression for a path's end.
SETTINGS_FILES = r"\.claude/settings(\.local)?\.json"


def agent(instance: ServerInstance) -> Agent:
    return Claude(instance)
