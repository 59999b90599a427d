"""One running instance of the companion server, living on the server thread's loop.

Two stages. `start()` is light: the token, the listening socket, the token file and what tells
agents where we are (each agent's `announce`: gemini's discovery file, Claude's lock), with nothing
heavier imported than pydantic (the settings): most Neovims never see an agent, and the MCP SDK and
aiohttp are most of the host's memory and start time.
The first connection on the socket (or an agent starting beside Neovim, which connects in a
moment, or anything else only they can do: an OpenCode registration, an event a client caused)
wakes it (`wake`): `serving.py` is imported and built, and takes the socket over; the connection
waits in the socket's backlog meanwhile. `stop()` ends it. A restart is a new instance on the
last one's port, with its token, when that port is still free (see `StartParams.kept_address`):
agents started from this Neovim keep the address and token they were given, and their review
gate keeps working. Any other start has a new port (or the fixed one) and a new token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import seam
from .agents import Agent, every_agent
from .base import listener, workspace
from .base.private_files import PrivateFileError, write_private
from .config import CompanionConfig
from .nvim.gateway import NvimGateway

if TYPE_CHECKING:
    from .serving import Serving

log = logging.getLogger(__name__)


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
    # A :GeminiRestart: the port and token of this Neovim's last server. Bound again if it can be,
    # and then its token is kept; else a new port and a new token (a port that was not ours a
    # moment may have been another user's, who could have collected the token meanwhile).
    kept_address: tuple[int, str] | None = None

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
        # Kept across a :GeminiRestart once the old port is ours again (start), else new.
        self.token = secrets.token_urlsafe(32)
        self.token_path: Path | None = None
        self.port = 0
        self.started_at = 0.0
        self.cwd = params.cwd
        self.lua_tools: Any = params.lua_tools  # the latest Lua pushed, until the catalog takes it
        self.context: seam.ContextChanged | None = None  # likewise the editor's context
        self.serving: Serving | None = None
        self._sock: socket.socket | None = None
        self._waking: asyncio.Task[Serving] | None = None
        self._on_change = on_change or (lambda: None)
        self.report: Callable[[str, str], None] = lambda _msg, _level: None
        self._stopping = False
        self.agents: list[Agent] = every_agent(self)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
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
        sock = self._bind()
        sock.listen(128)
        sock.setblocking(False)
        self._sock, self.port = sock, sock.getsockname()[1]
        kept = self.params.kept_address
        if kept is not None and kept[0] == self.port:
            self.token = kept[1]
        asyncio.get_running_loop().add_reader(sock, self._connection_waiting)
        self.started_at = time.time()
        # The token file first: whoever sees an announcement (the discovery file, claude's lock)
        # finds the token file in place too.
        self._write_token_file()
        for agent in self.agents:
            agent.announce()
        log.info("listening on %s", self.url)

    def _connection_waiting(self) -> None:
        """The first client knocks (its connection is in the socket's backlog): serve."""
        if self._sock is not None:
            asyncio.get_running_loop().remove_reader(self._sock)
        self.wake()

    def wake(self) -> asyncio.Task[Serving]:
        """Serving, built once (and its task, to wait for it)."""
        if self._waking is None:
            self._waking = asyncio.get_running_loop().create_task(self._wake())
        return self._waking

    async def _wake(self) -> Serving:
        assert self._sock is not None
        t0 = time.perf_counter()
        if self._sock.fileno() >= 0:  # (woken by an agent starting: the reader is still there)
            asyncio.get_running_loop().remove_reader(self._sock)
        try:
            # The SDK, aiohttp and the rest: imported here, on this loop, while the client waits.
            from .http.lean_import import import_serving_stack

            import_serving_stack()
            from .serving import Serving

            # Events from now on go to it, also those arriving during its start.
            self.serving = serving = Serving(self, self.agents)
            if self.context is not None:
                serving.on_event(self.context)
            await serving.start(self._sock, self.lua_tools)
        except Exception as exc:
            self.serving = None
            log.exception("could not serve clients")
            self.report_to_user(f"the server cannot serve clients: {type(exc).__name__}: {exc}", "error")
            self._sock.close()  # clients are refused at once rather than left waiting
            raise
        log.info("serving clients: woken in %.0f ms", (time.perf_counter() - t0) * 1000)
        self._on_change()
        return serving

    def on_event(self, event: seam.Event) -> None:
        """What each event from Lua does (on the server loop), whichever channel it came on.
        Before any client, only what a client will need is kept; anything else wakes the server."""
        if isinstance(event, seam.DirChanged):
            self.set_cwd(event.cwd)
        elif isinstance(event, seam.AgentStarting):
            if not self._stopping:
                self.wake()
        elif self.serving is not None:
            self.serving.on_event(event)
        elif isinstance(event, seam.ToolsChanged):
            self.lua_tools = event.tools
        elif isinstance(event, seam.ContextChanged):
            self.context = event
        else:
            self.with_serving(lambda serving: serving.on_event(event))

    def with_serving(self, fn: Callable[[Serving], Any]) -> None:
        """Run `fn` once clients are served (at once if they are), waking the server if needed."""
        if self.serving is not None:
            fn(self.serving)
            return

        def then(task: asyncio.Task[Serving]) -> None:
            if not task.cancelled() and task.exception() is None:
                fn(task.result())

        self.wake().add_done_callback(then)

    def _bind(self) -> socket.socket:
        """The listening socket on 127.0.0.1: the configured port; else the last server's (a
        restart), if it is free; else 0, a random one."""
        kept = self.params.kept_address
        if not self.config.port and kept is not None:
            try:
                return _bound(kept[0])
            except OSError as exc:
                log.info("the last port %d is not free (%s): a new one", kept[0], exc.strerror)
        try:
            return _bound(self.config.port)
        except OSError as exc:
            if self.config.port:
                raise OSError(exc.errno, _port_taken(self.config.port, exc)) from exc
            raise

    async def stop(self, *, farewell_s: float = 0.3) -> None:
        """Stop within ~0.4 s however many clients hold streams open (Neovim may be quitting).
        `farewell_s`: how long the agents may take to hear we go (0: not told, a restart, which
        announces itself again at once)."""
        self._stopping = True  # a :cd handled during the awaits below must not write the files again
        self.remove_files()
        if self._waking is not None and not self._waking.done():
            # Let a start under way finish, then stop it whole: cancelling it (wait_for cancels on
            # its timeout) could leave a half-started server holding the port, so that a
            # :GeminiStart right after found it taken (seen once on a loaded CI run). Before the
            # gateway closes: the start asks Neovim for its tools, and waited out its timeout.
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._waking), 10.0)
        self.gateway.close()
        if self.serving is not None:
            await self.serving.stop(farewell_s=farewell_s)
        elif self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock)
            self._sock.close()
        log.info("stopped")

    def close_listener(self) -> None:
        """The listening socket closed, whatever a stop left undone (idempotent)."""
        if self._sock is not None:
            self._sock.close()

    def remove_files(self) -> None:
        """What told clients where we are: the token file, the agents' files (discovery, lock)."""
        for agent in self.agents:
            agent.withdraw()
        self.remove_token_file()

    def changed(self) -> None:
        """Something the status shows changed (clients, tools, OpenCode registrations)."""
        self._on_change()

    # -- discovery -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{workspace.MCP_PATH}"

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

    def set_cwd(self, cwd: str) -> None:
        if cwd and cwd != self.cwd:
            self.cwd = cwd
            if not self._stopping:  # (a :cd handled while it stops must not write the files again)
                for agent in self.agents:
                    agent.moved()
            self._on_change()

    def report_to_user(self, message: str, level: str) -> None:
        self.report(message, level)

    def turn_ended(self, agent: str) -> None:
        """An agent's turn ended (its turn hook): Neovim looks for what it changed without a review."""
        self.gateway.notify_lua(seam.TURN_ENDED, agent)

    # -- status ----------------------------------------------------------------------------

    def describe(self, *, include_clients: bool = True) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.url,
            "port": self.port,
            "pid": self.params.ide_pid,
            "display_name": self.display_name,
            "workspace": self.workspace_roots(),
            "uptime_s": round(time.time() - self.started_at, 1) if self.started_at else 0,
            "client_count": 0,
            "direct_channel": self.gateway.direct,
            "serving": self.serving is not None,  # else tools load when the first client connects
        }
        for agent in self.agents:
            agent.describe(info)
        if include_clients:
            info["clients"] = []
        if self.serving is not None:
            self.serving.describe(info, include_clients=include_clients)
        return info


def _bound(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A port is ours again at once after a restart, not ~60 s later when the TIME_WAITs of the last
    # connections end. Linux still refuses a port another socket listens on.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


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
