"""One running instance of the companion server, living on the server thread's loop.

Owns the listening socket, the SDK session manager, the tool catalog and the discovery
file; `start()` and `stop()` are its whole lifecycle (a restart is a new instance, so a
new port and a new token).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from . import listener, seam, workspace
from .agents.claude.ide import ClaudeIde
from .agents.gemini import discovery
from .agents.gemini import gate as gemini_gate
from .agents.gemini.gate import GeminiGate
from .agents.gemini.ide import GeminiIde
from .agents.opencode.registrar import OpencodeRegistrar
from .config import CompanionConfig
from .gate import RecentlyAccepted
from .gateway import NvimGateway
from .http_app import MCP_PATH, REQUEST_TIMEOUT_S, BodyRefusals, ConnectionGuard, build_app
from .mcp_app import build_session_manager
from .private_files import PrivateFileError, remove_file, write_private
from .reviews import ReviewRegistry, read_text
from .sdk_compat import set_event_stream_keepalive
from .sessions import ClientRegistry
from .tools import NativeTool, ToolCatalog, value_result

log = logging.getLogger(__name__)

# Bounded shutdown: open SSE streams must not hold Neovim's exit (docs/ARCHITECTURE.md §6, VimLeavePre).
_SHUTDOWN_TIMEOUT_S = 0.15
# Open connections at most (more get a 503): a few per session (its POSTs, its event stream,
# a client's keep-alive pool), far below the host's file descriptor limit.
_MIN_CONNECTION_CAP = 256


@dataclass
class StartParams:
    """What the server needs from Neovim, gathered once by the edge at start."""

    config: CompanionConfig
    cwd: str
    nvim_pid: int
    nvim_ppid: int
    env: Mapping[str, str]
    lua_tools: Any
    version: str
    state_dir: str = ""
    servername: str = ""  # Neovim's listen address (v:servername): the gateway's own channel
    kept_token: str | None = None  # `token_file`: the token this Neovim's last server used (restart)

    @property
    def ide_pid(self) -> int:
        # docs/PROTOCOL.md §3: the CLI walks up from its shell to the Neovim *TUI*: the server's parent.
        return self.nvim_ppid if self.nvim_ppid > 1 else self.nvim_pid


class ServerInstance:
    def __init__(
        self, params: StartParams, gateway: NvimGateway, on_change: Callable[[], None] | None = None
    ) -> None:
        self.params = params
        self.config = params.config
        self.gateway = gateway
        # `token_file`: the same token across :GeminiRestart (claude reconnects by itself), else new.
        self.token = params.kept_token or secrets.token_urlsafe(32)
        self.token_path: Path | None = None
        self.port = 0
        self.started_at = 0.0
        self.discovery_path: Path | None = None
        self.discovery_error: str | None = None
        self.registry = ClientRegistry(max_sessions=self.config.max_sessions)
        self.catalog = ToolCatalog(
            gateway,
            self.config.tools,
            self.config.tool_timeout_s,
            max_pending_per_session=self.config.max_in_flight,
        )
        self.connections = ConnectionGuard(max(_MIN_CONNECTION_CAP, 4 * self.config.max_sessions))
        self.reviews = ReviewRegistry(gateway, self.config.diff)
        self.registry.on_removed.append(lambda client: self.reviews.session_gone(client.session_id))
        # A text the user accepted through gemini's gate answers gemini's own openDiff of it.
        accepted = RecentlyAccepted()
        self.gemini = GeminiIde(
            self.reviews,
            self.registry,
            self.config,
            accepted,
            settings_file=gemini_gate.settings_file("user", params.env, params.cwd),
            report=self.report_to_user,
        )
        self.gemini_gate = GeminiGate(
            self.reviews,
            lambda: self.config.review.gate,
            lambda path: read_text(path, self.config.max_file_bytes),
            accepted,
            self.turn_ended,
        )
        self.cwd = params.cwd
        self.claude = (
            ClaudeIde(
                gateway=gateway,
                registry=self.registry,
                catalog=self.catalog,
                reviews=self.reviews,
                gate=self.config.review.gate,
                max_file_bytes=self.config.max_file_bytes,
                max_message_bytes=self.config.max_body_bytes,
                version=params.version,
                workspace_roots=self.workspace_roots,
                report=self.report_to_user,
                turn_ended=self.turn_ended,
            )
            if self.config.claude.enabled
            else None
        )
        self.claude_error: str | None = None
        self._on_change = on_change or (lambda: None)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._manager_stop = asyncio.Event()
        self._manager_task: asyncio.Task[None] | None = None
        self._list_changed_handle: asyncio.TimerHandle | None = None
        self.opencode: OpencodeRegistrar | None = None
        self.report: Callable[[str, str], None] = lambda _msg, _level: None
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        # GET streams carry a keep-alive comment this often (Gemini CLI drops streams silent for 300 s).
        set_event_stream_keepalive(self.config.keepalive_s)

        await self.gateway.open_channel(self.params.servername)
        # Ahead of any tool call on the same channel: what the built-in tools may read.
        self.gateway.notify_lua(
            seam.CONFIGURE_TOOLS,
            {
                "max_file_bytes": self.config.max_file_bytes,
                "restrict_to_workspace": self.config.tools.restrict_to_workspace,
                "workspace_roots": self.config.workspace_roots,
            },
        )
        self._fill_catalog()
        manager = build_session_manager(
            catalog=self.catalog, registry=self.registry, config=self.config, version=self.params.version
        )
        await self._run_session_manager(manager)
        sock = self._bind()
        self.port = sock.getsockname()[1]
        await self._serve(manager, sock)
        self.started_at = time.time()
        self.opencode = OpencodeRegistrar(
            name=self.config.integrations.opencode_name,
            mcp_url=self.url,
            token=self.token,
            env=self.params.env,
            report=self.report_to_user,
            changed=self._on_change,
        )
        self.write_discovery()
        self._write_token_file()
        log.info("listening on %s", self.url)

    def _fill_catalog(self) -> None:
        """Native and Lua tools in the catalog; the status line follows clients and tools."""
        self.catalog.add_native(self._status_tool())
        for tool in self.gemini.tools():
            self.catalog.add_native(tool)
        self.catalog.set_lua_tools(self.params.lua_tools)
        self.catalog.on_changed.append(self._schedule_list_changed)
        self.registry.on_added.append(lambda _c: self._on_change())
        self.registry.on_removed.append(lambda _c: self._on_change())
        self.registry.on_stream_opened.append(lambda _c: self._on_change())

    async def _run_session_manager(self, manager: StreamableHTTPSessionManager) -> None:
        """Start the SDK's session manager in its own task; returns once it runs."""
        started = asyncio.Event()

        async def run_manager() -> None:
            # anyio task groups must be left from the task that entered them: one task owns it.
            async with manager.run():
                started.set()
                await self._manager_stop.wait()

        self._manager_task = asyncio.get_running_loop().create_task(run_manager())
        await started.wait()

    def _bind(self) -> socket.socket:
        """The listening socket on 127.0.0.1 (the configured port, or 0: a random one)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A fixed port is ours again at once after a restart, not ~60 s later when the TIME_WAITs
        # of the last connections end. Linux still refuses a port another socket listens on.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.config.port))
        except OSError as exc:
            sock.close()
            if self.config.port:
                raise OSError(exc.errno, _port_taken(self.config.port, exc)) from exc
            raise
        return sock

    async def _serve(self, manager: StreamableHTTPSessionManager, sock: socket.socket) -> None:
        """Serve the HTTP app on `sock`, every connection through our connection guard."""
        refusals = BodyRefusals(self.registry, self.config.max_body_bytes, self.report_to_user)
        if self.claude is not None:
            self.claude.route.too_large = lambda session_id: refusals.refused(
                self.registry.name_of(session_id), None
            )
        app = build_app(
            refusals=refusals,
            token=self.token,
            port=self.port,
            max_body_bytes=self.config.max_body_bytes,
            manager=manager,
            registry=self.registry,
            connections=self.connections,
            websocket=self.claude.route if self.claude is not None else None,
            hooks={gemini_gate.ROUTE: self.gemini_gate.handle},
        )
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=_SHUTDOWN_TIMEOUT_S,
            # Also for a new connection: one that sends no request is closed this soon.
            keepalive_timeout=REQUEST_TIMEOUT_S,
        )
        await self._runner.setup()
        assert self._runner.server is not None
        # Our own listener rather than a SockSite, to guard the connections it takes.
        self.connections.server = self._runner.server
        self._listener = await asyncio.get_running_loop().create_server(self.connections.factory, sock=sock)

    async def stop(self, *, farewell: bool = True) -> None:
        """Stop within ~0.4 s however many clients hold streams open (Neovim may be quitting).
        `farewell`: tell OpenCode servers we go (not on a restart, which registers again at once)."""
        self._stopping = True  # a :cd handled during the awaits below must not write the files again
        remove_file(self.discovery_path)
        self.remove_token_file()
        if self.claude is not None:
            self.claude.remove_lock()
        self.gateway.close()
        # Tell OpenCode we are going, while the rest shuts down.
        farewell_task = (
            asyncio.ensure_future(self.opencode.disconnect_all(0.3, farewell=farewell))
            if self.opencode
            else None
        )
        # Ending the session manager first closes every session and its event stream, so the HTTP
        # handlers waiting on them return and the runner's cleanup below does not have to wait.
        self._manager_stop.set()
        if self.claude is not None:  # WebSockets outlive the HTTP runner's cleanup otherwise
            await self.claude.route.close_all(_SHUTDOWN_TIMEOUT_S)
        if self._manager_task is not None:
            await asyncio.wait({self._manager_task}, timeout=_SHUTDOWN_TIMEOUT_S)
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._runner.cleanup(), _SHUTDOWN_TIMEOUT_S)
        if farewell_task is not None:
            await asyncio.wait({farewell_task}, timeout=_SHUTDOWN_TIMEOUT_S)
        log.info("stopped")

    # -- discovery -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"

    @property
    def display_name(self) -> str:
        return workspace.display_name(self.config.display_name, self.cwd)

    def workspace_roots(self) -> list[str]:
        return workspace.absolute_roots([self.cwd, *self.config.workspace_roots], self.cwd)

    def _write_token_file(self) -> None:
        """`token_file`: this start's token in `<state>/gemini_companion/token` (0600), written only now
        that the port is ours, and removed when the server stops. A client that reads it while
        Neovim is closed finds none, and a token collected then on a squatted port is never valid:
        a new Neovim (or a start after :GeminiStop or a refused port) makes a new one."""
        if not (self.config.token_file and self.params.state_dir):
            return
        directory = Path(self.params.state_dir) / "gemini_companion"
        fix = "remove it, or set token_file = false"
        try:
            self.token_path = write_private(
                directory, "token", self.token + "\n", private_levels=1, fix=fix, label="state directory"
            )
        except PrivateFileError as exc:
            self.report_to_user(f"token_file: {exc}", "error")

    def remove_token_file(self) -> None:
        """Remove the token file while it holds this server's token (never another Neovim's)."""
        path, self.token_path = self.token_path, None
        with contextlib.suppress(OSError):
            if path is not None and path.read_text(encoding="ascii").strip() == self.token:
                path.unlink()

    def write_discovery(self) -> None:
        """(Re)write the discovery file; a failure is kept for status and health, not raised."""
        if self._stopping:
            return
        directory = discovery.discovery_dir(self.params.env)
        try:
            discovery.ensure_dir(directory)
            removed = discovery.remove_stale(directory)
            if removed:
                log.info("removed %d stale discovery file(s)", len(removed))
            self.discovery_path = discovery.write_discovery(
                directory,
                pid=self.params.ide_pid,
                port=self.port,
                workspace=discovery.workspace_path(self.workspace_roots()),
                token=self.token,
                host_pid=os.getpid(),
                name=self.display_name,
            )
            self.discovery_error = None
        except PrivateFileError as exc:
            if str(exc) != self.discovery_error:
                # At start the service shows it; on a later :cd (the directory swapped meanwhile)
                # this says it: a refusal must reach the user, not only the log.
                self.report_to_user(str(exc), "error")
            self.discovery_error = str(exc)
            log.error("%s", exc)
        if self.claude is not None:
            problem = self.claude.write_lock(
                self.params.env,
                port=self.port,
                pid=self.params.nvim_pid,
                ide_name=self.display_name,
                token=self.token,
            )
            if problem is not None and problem != self.claude_error:
                self.report_to_user(problem, "error")
            self.claude_error = problem

    def set_cwd(self, cwd: str) -> None:
        if cwd and cwd != self.cwd:
            self.cwd = cwd
            self.write_discovery()
            if self.opencode is not None:  # OpenCode keeps registrations per directory
                self.opencode.change_directory(cwd)
            self._on_change()

    def report_to_user(self, message: str, level: str) -> None:
        self.report(message, level)

    def turn_ended(self, agent: str) -> None:
        """An agent's turn ended (its turn hook): Neovim looks for what it changed without a review."""
        self.gateway.notify_lua(seam.TURN_ENDED, agent)

    # -- tools -----------------------------------------------------------------------------

    def _schedule_list_changed(self) -> None:
        # Debounced: a plugin registering ten tools at once causes one re-list per client.
        if self._list_changed_handle is not None:
            self._list_changed_handle.cancel()
        loop = asyncio.get_running_loop()
        self._list_changed_handle = loop.call_later(
            0.05, self.registry.broadcast, "notifications/tools/list_changed", None
        )
        self._on_change()

    def _status_tool(self) -> NativeTool:
        async def handler(_args: dict[str, Any], _session: str | None) -> Any:
            return value_result(self.describe(include_clients=True))

        return NativeTool(
            name="companion_status",
            description="State of the Neovim companion server: URL, uptime, connected clients, "
            "tool count. Answered without calling into Neovim.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            handler=handler,
        )

    # -- status ----------------------------------------------------------------------------

    def describe(self, *, include_clients: bool = True) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.url,
            "port": self.port,
            "pid": self.params.ide_pid,
            "display_name": self.display_name,
            "discovery_file": str(self.discovery_path) if self.discovery_path else None,
            "discovery_error": self.discovery_error,
            "workspace": self.workspace_roots(),
            "workspace_path": discovery.workspace_path(self.workspace_roots()),
            "tools": len(self.catalog),
            "uptime_s": round(time.time() - self.started_at, 1) if self.started_at else 0,
            "client_count": len(self.registry),
            "direct_channel": self.gateway.direct,
        }
        if self.claude is not None:
            info["claude_lock_file"] = str(self.claude.lock_path) if self.claude.lock_path else None
            info["claude_error"] = self.claude_error
        if include_clients:
            info["clients"] = self.registry.snapshot()
        if self.opencode is not None and self.opencode.registrations:
            info["opencode"] = self.opencode.describe()
        return info


def _port_taken(port: int, exc: OSError) -> str:
    """Why the fixed `port` cannot be ours, naming who listens there when it is another user."""
    message = f"port {port} is not available ({exc.strerror}); set port = 0 for a random one"
    found = listener.check("127.0.0.1", port)
    if found is not None and found.listening is listener.Listening.OTHER_USER:
        message += (
            f". It is held by {found.detail}: a client configured with this port sends that user "
            "its token; no token file is written, and the next one will be new"
        )
    return message
