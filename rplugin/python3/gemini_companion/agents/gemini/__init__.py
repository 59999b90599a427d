"""Gemini CLI: its IDE companion protocol (discovery file, context notifications, openDiff/closeDiff)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...base.private_files import PrivateFileError, remove_file
from .. import Agent
from . import discovery

if TYPE_CHECKING:
    from ... import seam
    from ...core.tools import NativeTool
    from ...instance import ServerInstance
    from ...serving import Serving
    from .. import Handler
    from .gate import GeminiGate
    from .ide import GeminiIde

log = logging.getLogger(__name__)


class Gemini(Agent):
    def __init__(self, instance: ServerInstance) -> None:
        self._instance = instance
        self.discovery_path: Path | None = None
        self.discovery_error: str | None = None
        self._ide: GeminiIde | None = None
        self._gate: GeminiGate | None = None

    def announce(self) -> None:
        """(Re)write the discovery file; a failure is kept for status and health, not raised."""
        instance = self._instance
        directory = discovery.discovery_dir(instance.params.env)
        try:
            discovery.ensure_dir(directory)
            removed = discovery.remove_stale(directory)
            if removed:
                log.info("removed %d stale discovery file(s)", len(removed))
            self.discovery_path = discovery.write_discovery(
                directory,
                pid=instance.params.ide_pid,
                port=instance.port,
                workspace=discovery.workspace_path(instance.workspace_roots()),
                token=instance.token,
                host_pid=os.getpid(),
                name=instance.display_name,
            )
            self.discovery_error = None
        except PrivateFileError as exc:
            if str(exc) != self.discovery_error:
                # At start the lifecycle shows it; on a later :cd (the directory swapped meanwhile)
                # this says it: a refusal must reach the user, not only the log.
                instance.report_to_user(str(exc), "error")
            self.discovery_error = str(exc)
            log.error("%s", exc)

    def withdraw(self) -> None:
        remove_file(self.discovery_path)

    def describe(self, info: dict[str, Any]) -> None:
        info["discovery_file"] = str(self.discovery_path) if self.discovery_path else None
        info["discovery_error"] = self.discovery_error
        info["workspace_path"] = discovery.workspace_path(self._instance.workspace_roots())

    def serve(self, serving: Serving) -> None:
        from ...core.review_gate import current_text
        from . import gate
        from .ide import GeminiIde
        from .pairing import AcceptedEdits

        instance, config = self._instance, self._instance.config
        # An edit the user accepted through gemini's gate answers gemini's own openDiff of it.
        accepted = AcceptedEdits()
        self._ide = GeminiIde(
            serving.reviews,
            serving.registry,
            config,
            accepted,
            settings_file=gate.settings_file("user", instance.params.env, instance.cwd),
            report=instance.report_to_user,
        )
        self._gate = gate.GeminiGate(
            serving.reviews,
            lambda: config.review.gate,
            lambda path: current_text(path, config.max_file_bytes),
            accepted,
            instance.turn_ended,
        )

    def hooks(self) -> Mapping[str, Handler]:
        from .gate import ROUTE

        return {ROUTE: self._gate.handle} if self._gate is not None else {}

    def tools(self) -> list[NativeTool]:
        return self._ide.tools() if self._ide is not None else []

    def on_event(self, event: seam.Event) -> None:
        from ... import seam

        if isinstance(event, seam.ContextChanged) and self._ide is not None:
            self._ide.on_context(event.context)


# Its settings file, which decides whether its hooks run (agents.holds_agent_settings: an edit of
# it is always reviewed): a regular expression for a path's end.
SETTINGS_FILES = r"\.gemini/settings\.json"


def agent(instance: ServerInstance) -> Agent:
    return Gemini(instance)
