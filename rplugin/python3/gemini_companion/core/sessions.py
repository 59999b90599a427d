"""Connected MCP clients: one entry per MCP session, with its outbound channel.

Lives on the server loop. Fan-out is best effort and per client: a client whose stream
is slow or gone never delays the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..base.tcp_peer import Address

log = logging.getLogger(__name__)

# A client whose event stream closed and that sent nothing since (no new stream, no request) within
# this time is gone: its process ended (gemini's usual end, even by /quit: no DELETE). The SDK would keep
# the session until its idle timeout (30 min), and status would count the client all that time.
# A live TypeScript SDK client (gemini) reopens a dropped stream after 1 s, then 1.5 s.
STREAM_GRACE_S = 5.0


class Outbound(Protocol):
    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None: ...


@dataclass(frozen=True)
class TcpConnection:
    """The TCP connection a client's `initialize` came over, as our side sees it."""

    peer: Address  # the client's own socket: which process made it (base/tcp_peer.py)
    server: Address  # our listening address


@dataclass
class ConnectedClient:
    session_id: str
    name: str
    version: str
    protocol_version: str
    connection: Outbound
    transport: str = "http"  # "ws": Claude Code's IDE channel (agents/claude/ide.py)
    tcp: TcpConnection | None = None  # None: not known (Claude's WebSocket sessions)
    connected_at: float = field(default_factory=time.time)
    open_streams: int = 0
    # When it last showed a sign of life (a request, its stream opening or closing): the session
    # idle longest is the first to make room at the session cap.
    last_seen: float = field(default_factory=time.monotonic)
    # Latest pending (method, payload) per key (coalescing: a slow client only gets the newest).
    _pending: dict[str, tuple[str, Mapping[str, Any] | None]] = field(default_factory=dict)
    _sender: asyncio.Task[None] | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id[:8],
            "name": self.name,
            "version": self.version,
            "protocol_version": self.protocol_version,
            "transport": self.transport,
            "connected_at": self.connected_at,
            "stream_open": self.open_streams > 0,
        }

    def send_latest(self, method: str, params: Mapping[str, Any] | None, key: str | None = None) -> None:
        """Queue `method`, replacing any not-yet-sent payload with the same key (default: method)."""
        self._pending[key or method] = (method, params)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            method, params = self._pending.pop(next(iter(self._pending)))
            try:
                await self.connection.notify(method, params)
            except Exception:
                log.debug("notification %s to %s failed", method, self.session_id[:8], exc_info=True)

    def close(self) -> None:
        self._pending.clear()
        if self._sender is not None:
            self._sender.cancel()


Listener = Callable[[ConnectedClient], None]


class ClientRegistry:
    def __init__(self, stream_grace_s: float = STREAM_GRACE_S, max_sessions: int | None = None) -> None:
        self._clients: dict[str, ConnectedClient] = {}
        self._stream_grace_s = stream_grace_s
        self.max_sessions = max_sessions
        self._reapers: dict[str, asyncio.TimerHandle] = {}
        self._endings: set[asyncio.Task[None]] = set()  # (the loop keeps only weak references)
        # Ends a session in the SDK (set by the HTTP app); its end then removes the client here.
        self.end_session: Callable[[str], Awaitable[None]] | None = None
        # Whether a request of the session is being answered (set by the HTTP app).
        self.busy: Callable[[str], bool] = lambda _session_id: False
        self.on_added: list[Listener] = []
        self.on_stream_opened: list[Listener] = []
        self.on_removed: list[Listener] = []

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, session_id: str) -> ConnectedClient | None:
        return self._clients.get(session_id)

    def name_of(self, session_id: str | None) -> str:
        """Who a session is, as its client named itself (initialize clientInfo), for the user."""
        client = self._clients.get(session_id) if session_id else None
        return client.name if client is not None else "unknown client"

    def add(self, client: ConnectedClient) -> None:
        self._clients[client.session_id] = client
        log.info(
            "client connected: %s %s (protocol %s, session %s)",
            client.name,
            client.version,
            client.protocol_version,
            client.session_id[:8],
        )
        for listener in self.on_added:
            _safely(listener, client)

    def remove(self, session_id: str) -> None:
        client = self._clients.pop(session_id, None)
        self.touch(session_id)
        if client is None:
            return
        client.close()
        log.info("client gone: %s (session %s)", client.name, session_id[:8])
        for listener in self.on_removed:
            _safely(listener, client)

    def stream_opened(self, session_id: str) -> None:
        client = self._clients.get(session_id)
        if client is not None:
            client.open_streams += 1
            self.touch(session_id)
            for listener in self.on_stream_opened:
                _safely(listener, client)

    def touch(self, session_id: str) -> None:
        """Its client is alive (it sent a request, opened a stream) or its session ended:
        no reason to end it because an event stream closed."""
        reaper = self._reapers.pop(session_id, None)
        if reaper is not None:
            reaper.cancel()
        client = self._clients.get(session_id)
        if client is not None:
            client.last_seen = time.monotonic()

    def stream_closed(self, session_id: str) -> None:
        client = self._clients.get(session_id)
        if client is not None:
            client.open_streams = max(0, client.open_streams - 1)
            client.last_seen = time.monotonic()
            if client.open_streams == 0 and session_id not in self._reapers:
                self._reapers[session_id] = asyncio.get_running_loop().call_later(
                    self._stream_grace_s, self._reap, session_id
                )

    def _reap(self, session_id: str) -> None:
        self._reapers.pop(session_id, None)
        client = self._clients.get(session_id)
        if client is None or client.open_streams > 0:
            return
        log.info("client %s (session %s) left without ending its session", client.name, session_id[:8])
        end = self.end_session
        if end is None:
            self.remove(session_id)
            return

        async def end_then_forget() -> None:
            try:
                await end(session_id)
            finally:
                self.remove(session_id)  # (a no-op when the session's end already removed it)

        task = asyncio.get_running_loop().create_task(end_then_forget())
        self._endings.add(task)
        task.add_done_callback(self._endings.discard)

    async def make_room(self, opening: int = 0) -> bool:
        """Whether one more session may open beside `opening` others being opened now. At the cap,
        the session idle longest among those that show no sign of life (HTTP, no event stream open,
        no request being answered) is ended for the newcomer, as its client's DELETE would end it: a
        client that crashed before opening its stream (or one that never opens one) never ends its
        session, and new clients would be refused until the SDK's idle timeout (30 min). Its end is
        any session's end (`remove`): its reviews are released and the status follows."""
        cap = self.max_sessions
        while cap is not None and len(self._clients) + opening >= cap:
            idle = [
                c
                for c in self._clients.values()
                if c.transport == "http" and c.open_streams == 0 and not self.busy(c.session_id)
            ]
            if not idle:
                return False
            oldest = min(idle, key=lambda c: c.last_seen)
            log.info(
                "%d sessions open (max_sessions): ending %s's (session %s, idle %.0f s) for a new client",
                len(self._clients),
                oldest.name,
                oldest.session_id[:8],
                time.monotonic() - oldest.last_seen,
            )
            self.remove(oldest.session_id)  # first: a newcomer arriving meanwhile picks another
            if self.end_session is not None:
                await self.end_session(oldest.session_id)
        return True

    def broadcast(
        self, method: str, params: Mapping[str, Any] | None, *, transport: str | None = None
    ) -> None:
        """Queue `method` for every client (or only those connected over `transport`)."""
        for client in list(self._clients.values()):
            if transport is None or client.transport == transport:
                client.send_latest(method, params)

    def snapshot(self) -> list[dict[str, Any]]:
        return [c.describe() for c in list(self._clients.values())]


def _safely(listener: Listener, client: ConnectedClient) -> None:
    try:
        listener(client)
    except Exception:
        log.exception("session listener failed")
