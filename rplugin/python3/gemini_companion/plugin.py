"""The pynvim edge: one function and two RPC exports, all delegating to `CompanionService`.

Commands are defined in Lua (`plugin/gemini_companion.lua`) and call `GeminiCompanionCall`,
so the remote-plugin manifest stays stable while commands evolve. Everything that crosses to Lua
is named in `seam.py` (docs/SEAM.md), imported only once a command needs the service: the host
must load this module without pydantic while Neovim waits for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pynvim

from .logsetup import silence_stderr

if TYPE_CHECKING:
    from .service import CompanionService

silence_stderr()


@pynvim.plugin
class GeminiCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim
        self._service: CompanionService | None = None

    def _get_service(self) -> CompanionService:
        if self._service is None:
            from . import seam
            from .logsetup import setup_file_logging
            from .service import CompanionService

            service = CompanionService(self.nvim)
            info = self.nvim.exec_lua(seam.HOST_HELLO, self.nvim.channel_id)
            service.log_file = setup_file_logging(str(info["log_dir"]), int(info.get("pid") or 0))
            self._service = service
        return self._service

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
        service = self._get_service()
        if action in ("start", "boot"):
            message = service.start(self._start_info(), quiet=action == "boot")
            if action == "start" and message.startswith("already"):
                self._notify(f"server is {message}")
        elif action == "stop":
            message = service.stop()
            self._notify("server stopped" if message == "stopped" else f"server: {message}")
        elif action == "restart":
            service.stop()
            service.start(self._start_info())
        elif action == "opencode_register" and len(args) > 1:
            # `:GeminiOpencodeRegister` (announce the result) or opencode.nvim's server (quietly)
            announce = bool(args[2]) if len(args) > 2 else True
            service.opencode_register(str(args[1]), announce=announce)
            if service.state not in ("starting", "running"):
                service.start(self._start_info(), quiet=True)
        elif action == "opencode_forget" and len(args) > 1:
            service.opencode_forget(str(args[1]))

    @pynvim.rpc_export("gemini_companion_event", sync=False)
    def on_event(self, raw: Any) -> None:
        """An event from Lua (seam.Event; never blocks: the service hands it to the server loop)."""
        if self._service is not None:  # none before the first command: nothing to tell
            self._service.on_event(raw)

    @pynvim.rpc_export("gemini_companion_shutdown", sync=True)
    def on_shutdown(self) -> bool:
        """VimLeavePre: stop within a bounded time so quitting Neovim is never held up."""
        if self._service is not None:
            self._service.stop(timeout_s=0.45)
        return True
