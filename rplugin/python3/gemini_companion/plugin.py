"""The pynvim edge: one function and two RPC exports, all delegating to `CompanionService`.

Commands are defined in Lua (`plugin/gemini_companion.lua`) and call `GeminiCompanionCall`,
so the remote-plugin manifest stays stable while commands evolve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pynvim

from .logsetup import silence_stderr

if TYPE_CHECKING:
    from .service import CompanionService

silence_stderr()

_HELLO = "return require('gemini_companion.bridge').host_hello(...)"


@pynvim.plugin
class GeminiCompanionPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim
        self._service: CompanionService | None = None

    def _get_service(self) -> CompanionService:
        if self._service is None:
            from .logsetup import setup_file_logging
            from .service import CompanionService

            service = CompanionService(self.nvim)
            info = self.nvim.exec_lua(_HELLO, self.nvim.channel_id)
            service.log_file = setup_file_logging(str(info["log_dir"]), int(info.get("pid") or 0))
            self._service = service
        return self._service

    def _start_info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.nvim.exec_lua("return require('gemini_companion.bridge').start_info()")
        return info

    @pynvim.function("GeminiCompanionCall", sync=False)
    def call(self, args: list[Any]) -> None:
        """Entry point for the Lua commands: GeminiCompanionCall(action, ...)."""
        action = str(args[0]) if args else "status"
        service = self._get_service()
        bridge = "require('gemini_companion.bridge')"
        if action in ("start", "boot"):
            message = service.start(self._start_info(), quiet=action == "boot")
            if action == "start" and message.startswith("already"):
                self.nvim.exec_lua(f"{bridge}.notify(...)", f"server is {message}", "info")
        elif action == "stop":
            message = service.stop()
            self.nvim.exec_lua(
                f"{bridge}.notify(...)",
                "server stopped" if message == "stopped" else f"server: {message}",
                "info",
            )
        elif action == "restart":
            service.stop()
            service.start(self._start_info())
        elif action == "sync":
            service.push_state()
        elif action == "opencode_register" and len(args) > 1:
            # `:GeminiOpencodeRegister` (announce the result) or opencode.nvim's server (quietly)
            announce = bool(args[2]) if len(args) > 2 else True
            service.opencode_register(str(args[1]), announce=announce)
            if service.state not in ("starting", "running"):
                service.start(self._start_info(), quiet=True)
        elif action == "opencode_forget" and len(args) > 1:
            service.opencode_forget(str(args[1]))

    @pynvim.rpc_export("gemini_companion_event", sync=False)
    def on_event(self, event: dict[str, Any]) -> None:
        """Notifications from Lua (never blocks: hands off to the server loop)."""
        service = self._service
        if service is None or not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "dirchanged":
            service.set_cwd(str(event.get("cwd") or ""))
        elif kind == "tools":
            service.set_lua_tools(event.get("tools"))
        elif kind == "context":
            service.on_context(event.get("context"))
        elif kind == "diff":
            service.on_diff_event(event)
        elif kind == "tool_done":
            service.tool_done(event.get("id"), event.get("reply"))

    @pynvim.rpc_export("gemini_companion_shutdown", sync=True)
    def on_shutdown(self) -> bool:
        """VimLeavePre: stop within a bounded time so quitting Neovim is never held up."""
        if self._service is not None:
            self._service.stop(timeout_s=0.45)
        return True
