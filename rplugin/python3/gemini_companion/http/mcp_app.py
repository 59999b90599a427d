"""The MCP protocol side, all from the official SDK: low-level Server + session manager."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from ..config import CompanionConfig
from ..core.sessions import ClientRegistry, ConnectedClient, TcpConnection
from ..core.tools import ToolCatalog
from .sdk_compat import ToolsListChangedServer, connection_of

log = logging.getLogger(__name__)

SERVER_NAME = "gemini-companion-nvim"

ListTools = Callable[
    [ServerRequestContext[Any, Any], types.PaginatedRequestParams | None], Awaitable[types.ListToolsResult]
]
CallTool = Callable[[ServerRequestContext[Any, Any], types.CallToolRequestParams], Awaitable[Any]]


def session_id_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    session_id: str | None = connection_of(ctx).session_id
    return session_id


class SessionTracker:
    """Middleware: records each client at `initialize` and forgets it when its session ends."""

    def __init__(self, registry: ClientRegistry) -> None:
        self._registry = registry

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize":
            self._track(ctx, result)
        return result

    def _track(self, ctx: ServerRequestContext[Any, Any], result: HandlerResult) -> None:
        connection = connection_of(ctx)
        session_id = connection.session_id
        if session_id is None:
            return
        params = ctx.params or {}
        info = params.get("clientInfo") or {}
        negotiated = result.get("protocolVersion") if isinstance(result, dict) else None
        client = ConnectedClient(
            session_id=session_id,
            name=str(info.get("name") or "unknown"),
            version=str(info.get("version") or "?"),
            protocol_version=str(negotiated or params.get("protocolVersion") or "?"),
            connection=connection,
            tcp=_tcp_connection_of(ctx),
        )
        self._registry.add(client)
        connection.exit_stack.callback(self._registry.remove, session_id)


def _tcp_connection_of(ctx: ServerRequestContext[Any, Any]) -> TcpConnection | None:
    """The (peer, server) addresses of the HTTP request, from its ASGI scope (http/asgi_bridge.py)."""
    scope = getattr(ctx.request, "scope", None) or {}
    peer, server = scope.get("client"), scope.get("server")
    if not peer or not server:
        return None
    return TcpConnection(peer=(str(peer[0]), int(peer[1])), server=(str(server[0]), int(server[1])))


def build_server(
    version: str, registry: ClientRegistry, list_tools: ListTools, call_tool: CallTool
) -> ToolsListChangedServer:
    """Our SDK server (HTTP and Claude's WebSocket differ only in their two handlers)."""
    server = ToolsListChangedServer(
        SERVER_NAME,
        version=version,
        title="Neovim (gemini-companion.nvim)",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # Replace the default OpenTelemetry middleware (a no-op without an exporter, but per-message cost).
    server.middleware = [SessionTracker(registry)]
    return server


def build_session_manager(
    *, catalog: ToolCatalog, registry: ClientRegistry, config: CompanionConfig, version: str
) -> StreamableHTTPSessionManager:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=catalog.list_tools())

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        return await catalog.call(params.name, params.arguments, session_id_of(ctx))

    return StreamableHTTPSessionManager(
        app=build_server(version, registry, list_tools, call_tool),
        json_response=True,
        # Host/Origin/token are checked by our aiohttp middleware before the SDK sees a request.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=config.session_idle_timeout_s,
        max_request_body_size=config.max_body_bytes,
        max_sessions=config.max_sessions,
    )
