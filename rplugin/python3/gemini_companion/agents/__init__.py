"""What differs per agent: one package each (docs/ARCHITECTURE.md, "Adding an agent").

Each package's `agent(instance)` makes its `Agent`, its part in one server instance: from the file
that tells it where we are (`announce`) to what serves it once clients come (`serve`). The instance
and `Serving` go through `every_agent` (every package here) and never name one. A package may also
have `COMMANDS`, its own actions of `GeminiCompanionCall` (plugin.py hands over those it does not
know), and `SETTINGS_FILES`, a regular expression for the end of a path that decides whether its
hooks run (the gate always reviews an edit of one). The packages' `__init__` stay light: the idle
instance imports them, and the MCP SDK and aiohttp come with `serve`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from .. import seam
    from ..core.tools import NativeTool
    from ..instance import ServerInstance
    from ..serving import Serving

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
    # An agent's command: (its arguments, a way to run code on the server's loop) -> whether the
    # server must run for it (it is started quietly then).
    OnServer = Callable[[Callable[[ServerInstance], object]], None]
    Command = Callable[[list[Any], OnServer], bool]


class Agent:
    """One agent's part in a server instance. Each member is one that some agent needs; an agent
    overrides those it needs, the others do nothing."""

    def announce(self) -> None:
        """Tell the agent where this server is (a file it reads, a server it registers with): at start."""

    def moved(self) -> None:
        """Neovim's directory changed (the workspace agents are told): announce again."""
        self.announce()

    def withdraw(self) -> None:
        """Take back what `announce` wrote: the server stops, or the host exits (no await here)."""

    def describe(self, info: dict[str, Any]) -> None:
        """Add what the status shows of this agent (keys of the state Lua is shown)."""

    def ready(self, details: dict[str, Any]) -> None:
        """Add what Lua needs once the server is ready (seam.ON_READY: its children's environment)."""

    def serve(self, serving: Serving) -> None:
        """The first client came: build what serves this agent (its heavy imports go here)."""

    def hooks(self) -> Mapping[str, Handler]:
        """Its hooks' HTTP routes (POST), behind the same policy as MCP; a stop waits for their answers."""
        return {}

    def websocket(self) -> Handler | None:
        """Its IDE channel on `/`, if it speaks one over a WebSocket."""
        return None

    def tools(self) -> list[NativeTool]:
        """Tools of its own, answered in Python."""
        return []

    def on_event(self, event: seam.Event) -> None:
        """An event from Lua, once clients are served."""

    async def stop(self, *, farewell_s: float, timeout_s: float) -> None:
        """The server stops: its connections close within `timeout_s`; what it tells the agent that
        we go, within `farewell_s` (0: nothing, a restart)."""


@functools.cache
def _packages() -> tuple[ModuleType, ...]:
    """Every agent's package: each folder here (a new agent is its folder, nothing to list). Found
    once: every start, command and settings check asks, and the folders do not change."""
    return tuple(
        importlib.import_module(f"{__name__}.{found.name}")
        for found in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name)
        if found.ispkg
    )


def every_agent(instance: ServerInstance) -> list[Agent]:
    """Each agent's part in `instance` (by name: the order they are set up and told events)."""
    return [package.agent(instance) for package in _packages()]


def command(action: str) -> Command | None:
    """The agent's command named `action`, if an agent has one (its package's `COMMANDS`)."""
    for package in _packages():
        found: Command | None = getattr(package, "COMMANDS", {}).get(action)
        if found is not None:
            return found
    return None


@functools.cache
def settings_files() -> re.Pattern[str]:
    """The files that decide whether an agent's hooks run: each package's `SETTINGS_FILES`, as the
    end of a path (after a `/` or from its start)."""
    patterns = [getattr(package, "SETTINGS_FILES", None) for package in _packages()]
    either = "|".join(f"(?:{pattern})" for pattern in patterns if pattern)
    return re.compile(rf"(^|/)({either})$")


# Files that decide whether an agent's hooks run at all (its settings, our gate's own entries):
# an edit of one is reviewed whatever `review.gate` says, so no agent turns its gate off unseen.
# Each agent's package names its own (`SETTINGS_FILES`, read by `settings_files`); Codex's are
# here until it has a package.
_CODEX_SETTINGS = re.compile(r"(^|/)\.codex/(config\.toml|hooks\.json)$")


def holds_agent_settings(path: str) -> bool:
    from ..core.reviews import normalise  # (the idle instance imports this package: kept light)

    path = normalise(path)
    return settings_files().search(path) is not None or _CODEX_SETTINGS.search(path) is not None


def gate_wants(setting: str, path: str, applies_without_asking: bool = True) -> bool:
    """Whether the gate reviews an edit of `path`: `review.gate` says ('auto-modes': where the
    agent would apply it without asking), except for agent settings, which are always reviewed
    where the agent would not ask."""
    if not applies_without_asking and setting != "always":
        return False
    return setting != "never" or holds_agent_settings(path)
