"""What serves clients: the SDK session manager, the HTTP app on the instance's socket, the tools,
reviews and what each agent serves (`agents.Agent.serve`). Imported and built only when the first
client connects (`ServerInstance.wake`): it is most of the host's memory and start time (the MCP
SDK, aiohttp, jsonschema).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from . import seam
from .base import heap
from .core.reviews import ReviewRegistry
from .core.sessions import ClientRegistry
from .core.tools import NativeTool, ToolCatalog, value_result
from .http.app import REQUEST_TIMEOUT_S, BodyRefusals, ConnectionGuard, build_app
from .http.mcp_app import build_session_manager
from .http.sdk_compat import set_event_stream_keepalive

if TYPE_CHECKING:
    from .agents import Agent
    from .instance import ServerInstance

log = logging.getLogger(__name__)

# Bounded shutdown: open SSE streams must not hold Neovim's exit (docs/ARCHITECTURE.md §6, VimLeavePre).
_SHUTDOWN_TIMEOUT_S = 0.15
# Open connections at most (more get a 503): a few per session (its POSTs, its event stream,
# a client's keep-alive pool), far below the host's file descriptor limit.
_MIN_CONNECTION_CAP = 256


# What an agent whose edit was under a gate review reads when the server stops.
STOPPED_REASON = (
    "Neovim's review server stopped (:GeminiStop, :GeminiRestart or Neovim quitting) before the user decided"
)
# At most this long for those answers to be written to their connections.
_ANSWER_GRACE_S = 0.5


class Serving:
    def __init__(self, instance: ServerInstance, agents: list[Agent]) -> None:
        self._instance = instance
        config, gateway = instance.config, instance.gateway
        self.config = config
        self.registry = ClientRegistry(max_sessions=config.max_sessions)
        self.catalog = ToolCatalog(
            gateway, config.tools, config.tool_timeout_s, max_pending_per_session=config.max_in_flight
        )
        self.connections = ConnectionGuard(max(_MIN_CONNECTION_CAP, 4 * config.max_sessions))
        self.refusals = BodyRefusals(self.registry, config.max_body_bytes, instance.report_to_user)
        self.reviews = ReviewRegistry(gateway, config.review)
        self.registry.on_removed.append(lambda client: self.reviews.session_gone(client.session_id))
        self.agents = agents
        for agent in agents:
            agent.serve(self)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._manager_stop = asyncio.Event()
        self._manager_task: asyncio.Task[None] | None = None
        self._list_changed_handle: asyncio.TimerHandle | None = None
        self._hook_calls: set[asyncio.Task[Any]] = set()  # agents' hooks being answered

    async def start(self, sock: socket.socket, lua_tools: Any) -> None:
        """Serve on `sock` (bound and listening already: the clients waiting in its backlog are
        taken now)."""
        # GET streams carry a keep-alive comment this often (Gemini CLI drops streams silent for 300 s).
        set_event_stream_keepalive(self.config.keepalive_s)
        heap.keep_big_blocks_apart()
        self._fill_catalog(lua_tools)
        manager = build_session_manager(
            catalog=self.catalog,
            registry=self.registry,
            config=self.config,
            version=self._instance.params.version,
        )
        await self._run_session_manager(manager)
        await self._serve(manager, sock)

    def on_event(self, event: seam.Event) -> None:
        """What each event from Lua does once clients are served."""
        if isinstance(event, seam.ToolsChanged):
            self.catalog.set_lua_tools(event.tools)
        elif isinstance(event, seam.ReviewDecided):
            self.reviews.decided(event)
        elif isinstance(event, seam.ToolDone):
            self.catalog.complete(event.id, event.reply)
        else:  # the editor's context, an at-mention: the agents' own
            for agent in self.agents:
                agent.on_event(event)

    def _fill_catalog(self, lua_tools: Any) -> None:
        """Native and Lua tools in the catalog; the status line follows clients and tools."""
        self.catalog.add_native(self._status_tool())
        for agent in self.agents:
            for tool in agent.tools():
                self.catalog.add_native(tool)
        self.catalog.set_lua_tools(lua_tools)
        self.catalog.on_changed.append(self._schedule_list_changed)
        changed = self._instance.changed
        self.registry.on_added.append(lambda _c: changed())
        self.registry.on_removed.append(lambda _c: changed())
        self.registry.on_stream_opened.append(lambda _c: changed())

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

    async def _serve(self, manager: StreamableHTTPSessionManager, sock: socket.socket) -> None:
        """Serve the HTTP app on `sock`, every connection through our connection guard."""
        instance = self._instance
        app = build_app(
            refusals=self.refusals,
            token=instance.token,
            port=instance.port,
            max_body_bytes=self.config.max_body_bytes,
            manager=manager,
            registry=self.registry,
            connections=self.connections,
            websocket=next((w for w in (a.websocket() for a in self.agents) if w is not None), None),
            hooks={
                route: self._tracked(handler) for a in self.agents for route, handler in a.hooks().items()
            },
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

    def _tracked(
        self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """`handler`, its calls kept in `_hook_calls` while they run (a stop waits for them)."""

        async def tracked(request: web.Request) -> web.StreamResponse:
            task = asyncio.current_task()
            assert task is not None
            self._hook_calls.add(task)
            try:
                return await handler(request)
            finally:
                self._hook_calls.discard(task)

        return tracked

    async def stop(self, *, farewell_s: float) -> None:
        """Stop within ~0.4 s however many clients hold streams open (Neovim may be quitting), and
        the agents' farewells (OpenCode's) within `farewell_s` (0: none)."""
        # An agent waiting on a gate review hears why it ends, before its connection closes: a
        # hook that merely fails lets the agent apply the very edit under review.
        if self.reviews.interrupt(STOPPED_REASON):
            # The hooks' handlers write their answers and end; the IDE connection's answer goes
            # out on its next loop turns.
            await asyncio.sleep(0)
            if self._hook_calls:
                await asyncio.wait(set(self._hook_calls), timeout=_ANSWER_GRACE_S)
            await asyncio.sleep(_ANSWER_GRACE_S / 10)
        # The agents hear we are going (OpenCode) and close their connections (Claude's
        # WebSockets, which would outlive the HTTP runner's cleanup), while the rest shuts down.
        agents_stop = {
            asyncio.ensure_future(a.stop(farewell_s=farewell_s, timeout_s=_SHUTDOWN_TIMEOUT_S))
            for a in self.agents
        }
        # Ending the session manager first closes every session and its event stream, so the HTTP
        # handlers waiting on them return and the runner's cleanup below does not have to wait.
        self._manager_stop.set()
        await asyncio.wait(agents_stop, timeout=_SHUTDOWN_TIMEOUT_S)
        if self._manager_task is not None:
            await asyncio.wait({self._manager_task}, timeout=_SHUTDOWN_TIMEOUT_S)
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._runner.cleanup(), _SHUTDOWN_TIMEOUT_S)
        await asyncio.wait(agents_stop, timeout=farewell_s + _SHUTDOWN_TIMEOUT_S)

    # -- tools -----------------------------------------------------------------------------

    def _schedule_list_changed(self) -> None:
        # Debounced: a plugin registering ten tools at once causes one re-list per client.
        if self._list_changed_handle is not None:
            self._list_changed_handle.cancel()
        loop = asyncio.get_running_loop()
        self._list_changed_handle = loop.call_later(
            0.05, self.registry.broadcast, "notifications/tools/list_changed", None
        )
        self._instance.changed()

    def _status_tool(self) -> NativeTool:
        async def handler(_args: dict[str, Any], _session: str | None) -> Any:
            return value_result(self._instance.describe(include_clients=True))

        return NativeTool(
            name="companion_status",
            description="State of the Neovim companion server: URL, uptime, connected clients, "
            "tool count. Answered without calling into Neovim.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            handler=handler,
        )

    def describe(self, info: dict[str, Any], *, include_clients: bool) -> None:
        info["tools"] = len(self.catalog)
        info["client_count"] = len(self.registry)
        if include_clients:
            info["clients"] = self.registry.snapshot()
