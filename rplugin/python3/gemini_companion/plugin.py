"""The pynvim edge: one function and two RPC exports, all delegating to `ServerLifecycle`.

Commands are defined in Lua (`plugin/gemini_companion.lua`) and reach `GeminiCompanionCall` in
the host process Lua starts itself (host.lua), so the remote-plugin manifest stays stable while
commands evolve. Loaded in Neovim's shared python3 host too (the manifest), it does nothing
there: it imports nothing more and sets no logging until a command comes, and Lua refuses that
host's hello. Everything that crosses to Lua is named in `seam.py` (docs/SEAM.md), imported only
once a command needs the lifecycle, so the host loads this module quickly, without pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pynvim

if TYPE_CHECKING:
    from .lifecycle import ServerLifecycle


@pynvim.plugin
class GeminiCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim
        self._lifecycle: ServerLifecycle | None = None

    def _get_lifecycle(self) -> ServerLifecycle | None:
        """The lifecycle, made at the first command; None in a host Lua did not start (Neovim's
        shared python3 host, which loads this module too when :UpdateRemotePlugins registered it)."""
        if self._lifecycle is None:
            from . import seam

            hello = seam.HostHello.parse(self.nvim.exec_lua(seam.HOST_HELLO, self.nvim.channel_id))
            if hello.refused:
                self.nvim.exec_lua(seam.NOTIFY, hello.refused, "error")
                return None
            from .base.logsetup import setup_file_logging
            from .lifecycle import ServerLifecycle

            lifecycle = ServerLifecycle(self.nvim)
            lifecycle.log_file = setup_file_logging(hello.log_dir, hello.pid)
            self._lifecycle = lifecycle
        return self._lifecycle

    def _start_info(self) -> dict[str, Any]:
        from .seam import START_INFO

        info: dict[str, Any] = self.nvim.exec_lua(START_INFO)
        return info

    def _notify(self, message: str) -> None:
        from .seam import NOTIFY

        self.nvim.exec_lua(NOTIFY, message, "info")

    @pynvim.function("GeminiCompanionCall", sync=False)
    def call(self, args: list[Any]) -> None:
        """Entry point for the Lua commands: GeminiCompanionCall(action, ...)."""
        action = str(args[0]) if args else "status"
        lifecycle = self._get_lifecycle()
        if lifecycle is None:
            return
        if action in ("start", "boot"):
            message = lifecycle.start(self._start_info(), quiet=action == "boot")
            if action == "start" and message.startswith("already"):
                self._notify(f"server is {message}")
        elif action == "stop":
            message = lifecycle.stop()
            self._notify("server stopped" if message == "stopped" else f"server: {message}")
        elif action == "restart":
            lifecycle.stop(keep_token=True)
            lifecycle.start(self._start_info())
        elif action == "gate" and len(args) > 4:
            from .agents.hook_entries import command

            env = args[5] if len(args) > 5 and isinstance(args[5], dict) else {}
            message, level = command(str(args[1]), str(args[2]), str(args[3]), str(args[4]), env)
            from .seam import NOTIFY

            self.nvim.exec_lua(NOTIFY, message, level)
        elif (
            len(args) > 1
            and lifecycle.agent_command(action, args[1:])
            and lifecycle.state not in ("starting", "running")
        ):  # an agent's command that needs the server (:GeminiOpencodeRegister): it starts, quietly
            lifecycle.start(self._start_info(), quiet=True)

    @pynvim.rpc_export("gemini_companion_event", sync=False)
    def on_event(self, raw: Any) -> None:
        """An event from Lua (seam.Event; never blocks: ServerLifecycle hands it to the server loop)."""
        if self._lifecycle is not None:  # none before the first command: nothing to tell
            self._lifecycle.on_event(raw)

    @pynvim.rpc_export("gemini_companion_shutdown", sync=True)
    def on_shutdown(self) -> bool:
        """VimLeavePre: stop within a bounded time so quitting Neovim is never held up."""
        if self._lifecycle is not None:
            self._lifecycle.stop(timeout_s=0.45)
        return True
