"""The Antigravity CLI (`agy`): no IDE protocol, an MCP client; its review gate is its PreToolUse hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import Agent

if TYPE_CHECKING:
    from ...instance import ServerInstance
    from ...serving import Serving
    from .. import Handler
    from .gate import AgyGate


class Agy(Agent):
    def __init__(self, instance: ServerInstance) -> None:
        self._instance = instance
        self._gate: AgyGate | None = None

    def serve(self, serving: Serving) -> None:
        from ...core.review_gate import current_text
        from .gate import AgyGate

        config = self._instance.config
        self._gate = AgyGate(
            serving.reviews,
            lambda: config.review.gate,
            lambda path: current_text(path, config.max_file_bytes),
        )

    def hooks(self) -> Mapping[str, Handler]:
        from .gate import ROUTE

        return {ROUTE: self._gate.handle} if self._gate is not None else {}


# Its hooks file and its own settings folder, which decide whether its hooks run
# (agents.holds_agent_settings: an edit of one is always reviewed): a regular expression
# for a path's end.
SETTINGS_FILES = r"\.agents/hooks\.json|\.gemini/antigravity-cli/.+"


def agent(instance: ServerInstance) -> Agent:
    return Agy(instance)
