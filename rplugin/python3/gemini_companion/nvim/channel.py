"""The server thread's own msgpack-RPC channel to Neovim (its listen address, `v:servername`).

Driven by the server loop like any other socket: a tool call is one write and one read, with
no hop onto pynvim's thread and back (two cross-thread wake-ups, a greenlet, GIL hand-offs).
pynvim's channel stays for the edge: commands, state pushes, events from Lua. The one message
Neovim sends here unasked is an asynchronous tool's answer (an event notification, handed to
`on_notification`), so it comes back the road its call went; a request gets an error answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import msgpack  # a pynvim dependency

log = logging.getLogger(__name__)

# msgpack's Packer and Unpacker keep their buffer as big as the biggest message they handled (a
# 1 M-line review's 22 MB, both ways: ~42 MiB kept, measured): past this size a fresh one
# replaces the one that grew.
BIG_MESSAGE_BYTES = 1 << 20


class NvimRpcError(Exception):
    """Neovim answered with an error; args[0] is its message."""


class NvimChannel(asyncio.Protocol):
    def __init__(self, on_notification: Callable[[str, Any], None] | None = None) -> None:
        self._on_notification = on_notification
        self.id: int | None = None  # this channel's id in Neovim, once asked (NvimGateway.reply_channel)
        self._transport: asyncio.Transport | None = None
        # Same decoding as pynvim's session: str as str, invalid UTF-8 kept via surrogateescape.
        self._unpacker = self._new_unpacker()
        self._fed = 0  # bytes fed to the unpacker
        self._unpacker_grew = False
        self._packer = self._new_packer()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 1
        self.closed = False

    @classmethod
    async def connect(
        cls, address: str, on_notification: Callable[[str, Any], None] | None = None
    ) -> NvimChannel:
        loop = asyncio.get_running_loop()
        factory = lambda: cls(on_notification)  # noqa: E731
        if address.startswith("/") or ":" not in address:
            _, channel = await loop.create_unix_connection(factory, address)
        else:  # host:port (nvim --listen 127.0.0.1:6666)
            host, _, port = address.rpartition(":")
            _, channel = await loop.create_connection(factory, host.strip("[]"), int(port))
        return channel

    @staticmethod
    def _new_unpacker() -> msgpack.Unpacker:
        return msgpack.Unpacker(raw=False, unicode_errors="surrogateescape")

    @staticmethod
    def _new_packer() -> msgpack.Packer:
        return msgpack.Packer(unicode_errors="surrogateescape")

    def _pack(self, message: list[Any]) -> bytes:
        data: bytes = self._packer.pack(message)
        if len(data) >= BIG_MESSAGE_BYTES:
            self._packer = self._new_packer()
        return data

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._unpacker.feed(data)
        self._fed += len(data)
        self._unpacker_grew |= self._fed - self._unpacker.tell() >= BIG_MESSAGE_BYTES
        for msg in self._unpacker:
            if msg[0] == 1:  # [1, id, error, result]
                fut = self._pending.pop(msg[1], None)
                if fut is None or fut.done():
                    continue  # the caller gave up (timeout, cancellation)
                if msg[2] is not None:
                    fut.set_exception(NvimRpcError(_error_text(msg[2])))
                else:
                    fut.set_result(msg[3])
            elif msg[0] == 2 and self._on_notification is not None:  # [2, method, args]
                try:
                    self._on_notification(msg[1], msg[2])
                except Exception:
                    log.exception("handling the notification %r", msg[1])
            elif msg[0] == 0 and self._transport is not None:  # [0, id, method, args]
                self._transport.write(self._pack([1, msg[1], [0, "no handler"], None]))
        if self._unpacker_grew and self._unpacker.tell() == self._fed:  # nothing half-read in it
            self._unpacker, self._fed, self._unpacker_grew = self._new_unpacker(), 0, False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("Neovim closed the RPC channel"))
        if exc is not None:
            log.warning("RPC channel to Neovim lost: %s", exc)

    def request(self, method: str, *args: Any) -> asyncio.Future[Any]:
        """Send `method(*args)`; the future resolves with the result or NvimRpcError."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.closed or self._transport is None:
            fut.set_exception(ConnectionError("the RPC channel to Neovim is closed"))
            return fut
        msgid = self._next_id
        self._next_id = msgid + 1
        self._pending[msgid] = fut
        self._transport.write(self._pack([0, msgid, method, list(args)]))
        return fut

    def notify(self, method: str, *args: Any) -> None:
        """Send `method(*args)` as a notification (no answer; Neovim reports errors as events)."""
        if not self.closed and self._transport is not None:
            self._transport.write(self._pack([2, method, list(args)]))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _error_text(err: Any) -> str:
    text = err[1] if isinstance(err, list | tuple) and len(err) > 1 else err
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return str(text)
