"""OpenCode (`opencode serve`): we register this server with it as a remote MCP server
(`registrar.py`), by the user's command or following opencode.nvim's server (Lua)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .. import Agent

if TYPE_CHECKING:
    from ...instance import ServerInstance
    from ...serving import Serving
    from .. import Command, OnServer
    from .registrar import OpencodeRegistrar

# The OpenCode servers this Neovim registers with, kept across restarts (each new server registers
# again): url -> whether to announce the result. A target that failed is dropped (not contacted
# again until registered again). One Python host serves one Neovim.
TARGETS: dict[str, bool] = {}


class Opencode(Agent):
    def __init__(self, instance: ServerInstance) -> None:
        self._instance = instance
        self.registrar: OpencodeRegistrar | None = None

    def announce(self) -> None:
        """A (re)start: register again where the last server was registered (which wakes this one).
        Once the loop runs on, as the lifecycle's own callbacks do."""
        loop = asyncio.get_running_loop()
        for url, announce in TARGETS.items():
            loop.call_soon(self.register, url, announce)

    def moved(self) -> None:
        if self.registrar is not None:  # OpenCode keeps registrations per directory
            self.registrar.change_directory(self._instance.cwd)

    def register(self, url: str, announce: bool) -> None:
        instance = self._instance

        def register(_serving: Serving) -> None:
            assert self.registrar is not None
            self.registrar.register(url, instance.cwd, announce=announce)

        instance.with_serving(register)

    def forget(self, url: str) -> None:
        if self.registrar is not None:
            self.registrar.forget(url)

    def serve(self, serving: Serving) -> None:
        from .registrar import OpencodeRegistrar

        instance = self._instance
        self.registrar = OpencodeRegistrar(
            name=instance.config.integrations.opencode_name,
            mcp_url=instance.url,
            token=instance.token,
            env=instance.params.env,
            report=instance.report_to_user,
            changed=instance.changed,
        )
        # A target that failed is not registered again after restarts.
        self.registrar.on_unfollowed = lambda url: TARGETS.pop(url, None)

    def describe(self, info: dict[str, Any]) -> None:
        if self.registrar is not None and self.registrar.registrations:
            info["opencode"] = self.registrar.describe()

    async def stop(self, *, farewell_s: float, timeout_s: float) -> None:
        """Tell OpenCode we are going (0: a restart, which registers again at once: a farewell
        OpenCode handled after that registration would leave it disconnected from the new server)."""
        if self.registrar is not None:
            await self.registrar.disconnect_all(farewell_s)


def agent(instance: ServerInstance) -> Agent:
    return Opencode(instance)


def _of(server: ServerInstance) -> Opencode:
    return next(a for a in server.agents if isinstance(a, Opencode))


def _register(args: list[Any], on_server: OnServer) -> bool:
    """`:GeminiOpencodeRegister` (announce the result) or opencode.nvim's server (quietly)."""
    url, announce = str(args[0]), bool(args[1]) if len(args) > 1 else True
    TARGETS[url] = announce
    on_server(lambda server: _of(server).register(url, announce))
    return True


def _forget(args: list[Any], on_server: OnServer) -> bool:
    url = str(args[0])
    TARGETS.pop(url, None)
    on_server(lambda server: _of(server).forget(url))
    return False


COMMANDS: dict[str, Command] = {"opencode_register": _register, "opencode_forget": _forget}
