"""The one way the server thread reaches Neovim.

Preferred path: a msgpack-RPC channel of the server's own (`NvimChannel`) to Neovim's
listen address (`v:servername`), driven by the server thread's asyncio loop, so a call is
one socket round trip and never touches pynvim's thread. Fallback (no address, a Windows
named pipe, the connection failed): schedule onto pynvim's loop (thread-safe
`call_soon_threadsafe` into a greenlet) and resolve an asyncio future of the server loop.
Once our channel existed, a lost one is reconnected, never replaced by pynvim's: Neovim closes a
channel for a message it cannot parse, and on pynvim's (the host's stdio) that drops the host.
Either way the caller awaits with a timeout. Neovim can be stuck (busy Lua loop, hit-enter
prompt): then callers get a `NeovimUnavailable` with a reason a person understands, and
the server goes on serving everything that does not need Neovim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..seam import EVENT_METHOD
from .channel import NvimChannel, NvimRpcError

log = logging.getLogger(__name__)

# nvim_get_mode() is answered even while Neovim waits at a prompt; give it little time.
_MODE_PROBE_TIMEOUT_S = 0.5
_CONNECT_TIMEOUT_S = 2.0


class NeovimUnavailable(Exception):
    """Neovim could not run the call (blocked, too busy, or gone)."""


class NeovimCallError(Exception):
    """The call reached Neovim and failed there (a Lua error)."""


class NvimLike(Protocol):
    def async_call(self, fn: Callable[..., Any], *args: Any) -> None: ...
    def exec_lua(self, code: str, *args: Any, **kwargs: Any) -> Any: ...
    def request(self, name: str, *args: Any, **kwargs: Any) -> Any: ...


class NvimGateway:
    def __init__(self, nvim: NvimLike, *, timeout_s: float, max_in_flight: int) -> None:
        self._nvim = nvim
        self.timeout_s = timeout_s
        self.max_in_flight = max_in_flight
        self._in_flight = 0
        self._closed = False
        # Set after a timeout: until Neovim answers again, first ask whether it is at a prompt,
        # so a user sitting at "Press ENTER" costs each caller 0.5 s instead of the full timeout.
        self._suspect_blocked = False
        self._pending: set[asyncio.Future[Any]] = set()
        self._post = _poster(nvim)
        self._channel: NvimChannel | None = None
        self._address = ""
        self._reconnect_lock: asyncio.Lock | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # the channel's (the server's) loop
        # Events Lua sends on our channel (an asynchronous tool's answer), on the server loop.
        self.on_event: Callable[[Any], None] | None = None

    @property
    def direct(self) -> bool:
        """Whether calls go over the server's own RPC channel (else through pynvim)."""
        return self._channel is not None and not self._channel.closed

    async def open_channel(self, address: str | None) -> None:
        """Connect the server's own RPC channel to Neovim's listen address (server loop only)."""
        if not address or address.startswith("\\\\"):  # none, or a Windows named pipe
            return
        try:
            self._loop = asyncio.get_running_loop()
            self._channel = await asyncio.wait_for(
                NvimChannel.connect(address, self._deliver), _CONNECT_TIMEOUT_S
            )
            self._address = address
            self._reconnect_lock = asyncio.Lock()
        except (OSError, ValueError, asyncio.TimeoutError) as exc:
            log.warning("calls go through pynvim: cannot connect to %s (%s)", address, exc)

    def _deliver(self, method: str, args: Any) -> None:
        if method == EVENT_METHOD and self.on_event is not None and isinstance(args, list) and args:
            self.on_event(args[0])

    async def reply_channel(self) -> int | None:
        """Our channel's id in Neovim, for an answer that comes later (an asynchronous tool's) to
        come back on it; None when calls go through pynvim (answers then come on the host's)."""
        channel = self._channel
        if channel is None or channel.closed:
            return None
        if channel.id is None:  # asked once per connection
            try:
                # Little time: a Neovim that cannot answer this cannot run the call either.
                info = await asyncio.wait_for(channel.request("nvim_get_api_info"), _MODE_PROBE_TIMEOUT_S)
                channel.id = int(info[0])
            except Exception as exc:
                log.debug("no channel id (%s): answers come through pynvim", exc)
                return None
        return channel.id

    def close(self) -> None:
        """Fail every pending call now; later calls fail at once. Server loop only."""
        self._closed = True
        if self._channel is not None:
            self._channel.close()
        for fut in list(self._pending):
            if not fut.done():
                fut.set_exception(NeovimUnavailable("the companion server is stopping"))

    def _start(self, method: str, args: list[Any], fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Send `method(*args)` over our channel, or run `fn` (same call, via pynvim) on pynvim's
        loop when we never had a channel. A closed channel fails the call (ConnectionError)."""
        channel = self._channel
        if channel is not None:
            return channel.request(method, *args)
        return self._schedule(fn)

    async def _reconnect(self, what: str) -> None:
        """Replace our channel if Neovim closed it (a message it could not parse, say)."""
        channel, lock = self._channel, self._reconnect_lock
        if channel is None or not channel.closed or lock is None or self._closed:
            return
        async with lock:  # one reconnect for every call that found the channel closed
            if self._channel is not channel:
                return
            try:
                self._channel = await asyncio.wait_for(
                    NvimChannel.connect(self._address, self._deliver), _CONNECT_TIMEOUT_S
                )
            except (OSError, ValueError, asyncio.TimeoutError) as exc:
                raise NeovimUnavailable(
                    f"lost the connection to Neovim and cannot reconnect ({exc}); {what} was not run"
                ) from None
            log.info("reconnected to Neovim at %s", self._address)

    def _schedule(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()

        def deliver(result: Any, exc: BaseException | None) -> None:
            if fut.done():  # timed out, cancelled or failed by close() meanwhile
                return
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(result)

        def run() -> None:
            # Runs in a greenlet on pynvim's loop. A call whose caller already gave up (timed out,
            # cancelled, or failed by close()) is not sent. Reading done() across threads is a
            # benign race: at worst one call the caller just abandoned still runs.
            if fut.done():
                return
            try:
                outcome: tuple[Any, BaseException | None] = (fn(), None)
            except BaseException as exc:  # always resolve
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the server loop is gone
                loop.call_soon_threadsafe(deliver, *outcome)

        self._post(run)
        return fut

    async def _await(self, fut: asyncio.Future[Any], timeout: float) -> Any:
        self._pending.add(fut)
        timer = asyncio.get_running_loop().call_later(timeout, _time_out, fut)
        try:
            return await fut
        finally:
            timer.cancel()
            self._pending.discard(fut)

    async def _blocking_reason(self) -> str | None:
        """Ask Neovim (cheaply) whether it is waiting at a prompt; None if it is not."""
        try:
            mode = await self._await(
                self._start("nvim_get_mode", [], lambda: self._nvim.request("nvim_get_mode")),
                _MODE_PROBE_TIMEOUT_S,
            )
        except (TimeoutError, asyncio.TimeoutError):
            return "Neovim is not responding (busy running something)"
        except Exception:
            return None
        if isinstance(mode, dict) and mode.get("blocking"):
            return f"Neovim is waiting for the user at a prompt (mode {mode.get('mode', '?')!r})"
        return None

    async def request(
        self,
        method: str,
        *args: Any,
        fn: Callable[[], Any] | None = None,
        timeout_s: float | None = None,
        what: str = "call",
    ) -> Any:
        """Call the Neovim API `method(*args)`; `fn` is the same call through pynvim (fallback)."""
        if self._closed:
            raise NeovimUnavailable("the companion server is stopping")
        if self._in_flight >= self.max_in_flight:
            raise NeovimUnavailable(
                f"too many calls waiting for Neovim ({self._in_flight}); try again when it has caught up"
            )
        if self._suspect_blocked:
            reason = await self._blocking_reason()
            if reason is not None:
                raise NeovimUnavailable(f"{reason}; {what} was not run")
            self._suspect_blocked = False
        await self._reconnect(what)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        if fn is None:
            fn = lambda: self._nvim.request(method, *args)  # noqa: E731
        self._in_flight += 1
        try:
            return await self._await(self._start(method, list(args), fn), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            self._suspect_blocked = True
            reason = await self._blocking_reason() or "Neovim did not answer"
            raise NeovimUnavailable(f"{reason}; {what} timed out after {timeout:g} s") from None
        except NeovimUnavailable:
            raise
        except ConnectionError:
            raise NeovimUnavailable(f"lost the connection to Neovim; {what} did not complete") from None
        except Exception as exc:
            raise NeovimCallError(_lua_error_text(exc)) from exc
        finally:
            self._in_flight -= 1

    async def exec_lua(
        self, code: str, *args: Any, timeout_s: float | None = None, what: str = "call"
    ) -> Any:
        return await self.request(
            "nvim_exec_lua",
            code,
            list(args),
            fn=lambda: self._nvim.exec_lua(code, *args),
            timeout_s=timeout_s,
            what=what,
        )

    def notify_lua(self, code: str, *args: Any) -> None:
        """Fire-and-forget Lua (no answer awaited); safe from any thread."""
        if self._closed:
            return
        channel = self._channel
        if channel is not None and _running_loop() is self._loop:
            # On the server loop: the same channel as exec_lua, so Neovim sees them in order.
            if channel.closed:
                task = asyncio.ensure_future(self._notify_after_reconnect(code, list(args)))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                channel.notify("nvim_exec_lua", code, list(args))
            return

        def run() -> None:
            try:
                self._nvim.exec_lua(code, *args, async_=True)
            except Exception:
                log.debug("notify_lua failed", exc_info=True)

        self._post(run)

    async def _notify_after_reconnect(self, code: str, args: list[Any]) -> None:
        try:
            await self._reconnect("a notification")
        except NeovimUnavailable as exc:
            log.debug("notify_lua dropped: %s", exc)
            return
        if self._channel is not None and not self._channel.closed:
            self._channel.notify("nvim_exec_lua", code, args)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _time_out(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def _poster(nvim: Any) -> Callable[[Callable[[], None]], None]:
    """Thread-safe "run `fn` in a greenlet on pynvim's loop".

    Same as `nvim.async_call(fn)` minus its per-call `traceback.format_stack()` (which also
    stats every source file through linecache): that alone was ~0.1 ms per tool call.
    """
    loop = getattr(nvim, "loop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop):  # stand-ins in the unit tests
        async_call: Callable[[Callable[[], None]], None] = nvim.async_call
        return async_call
    import greenlet  # a pynvim dependency

    def post(fn: Callable[[], None]) -> None:
        loop.call_soon_threadsafe(lambda: greenlet.greenlet(fn).switch())

    return post


def _lua_error_text(exc: BaseException) -> str:
    """pynvim's NvimError / our NvimRpcError carry Neovim's message; keep only the readable part."""
    text = str(exc.args[0] if exc.args else exc)
    if isinstance(exc.args[0] if exc.args else None, bytes):
        text = exc.args[0].decode("utf-8", "replace")
    for marker in ("Error executing lua: ", "Lua: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.split("\nstack traceback:", 1)[0].strip()


__all__ = ["NeovimCallError", "NeovimUnavailable", "NvimGateway", "NvimRpcError"]
