"""The one way the server thread reaches Neovim.

Every call is scheduled onto pynvim's loop with `nvim.async_call` (the only thread-safe
entry), resolved through a `concurrent.futures.Future`, and awaited on the server's own
loop with a timeout. Neovim can be stuck (busy Lua loop, hit-enter prompt): then callers
get a `NeovimUnavailable` with a reason a person understands, and the server goes on
serving everything that does not need Neovim.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)

# nvim_get_mode() is answered even while Neovim waits at a prompt; give it little time.
_MODE_PROBE_TIMEOUT_S = 0.5


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
        self._pending: set[concurrent.futures.Future[Any]] = set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def close(self) -> None:
        """Fail every pending call now; later calls fail at once."""
        self._closed = True
        for fut in list(self._pending):
            _resolve(fut, exc=NeovimUnavailable("the companion server is stopping"))

    def _schedule(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            # Runs in a greenlet on pynvim's loop. A call whose caller already gave up (timed out,
            # or failed by close() from the server thread) is not sent.
            if fut.done():  # finished by close(); checked first, as the call below logs loudly
                return
            try:
                if not fut.set_running_or_notify_cancel():
                    return
            except RuntimeError:  # close() won the race after all
                return
            try:
                result = fn()
            except BaseException as exc:  # async_call swallows exceptions: always resolve
                _resolve(fut, exc=exc)
            else:
                _resolve(fut, result=result)

        self._nvim.async_call(run)
        return fut

    async def _await(self, fut: concurrent.futures.Future[Any], timeout: float) -> Any:
        self._pending.add(fut)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), timeout)
        finally:
            self._pending.discard(fut)

    async def _blocking_reason(self) -> str | None:
        """Ask Neovim (cheaply) whether it is waiting at a prompt; None if it is not."""
        try:
            mode = await self._await(
                self._schedule(lambda: self._nvim.request("nvim_get_mode")), _MODE_PROBE_TIMEOUT_S
            )
        except (TimeoutError, asyncio.TimeoutError):
            return "Neovim is not responding (busy running something)"
        except Exception:
            return None
        if isinstance(mode, dict) and mode.get("blocking"):
            return f"Neovim is waiting for the user at a prompt (mode {mode.get('mode', '?')!r})"
        return None

    async def call(self, fn: Callable[[], Any], *, timeout_s: float | None = None, what: str = "call") -> Any:
        """Run `fn` (which may use the nvim API) on pynvim's loop; return its result."""
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
        timeout = self.timeout_s if timeout_s is None else timeout_s
        self._in_flight += 1
        fut = self._schedule(fn)
        try:
            return await self._await(fut, timeout)
        except (TimeoutError, asyncio.TimeoutError):
            fut.cancel()  # not sent yet? then it never will be
            self._suspect_blocked = True
            reason = await self._blocking_reason() or "Neovim did not answer"
            raise NeovimUnavailable(f"{reason}; {what} timed out after {timeout:g} s") from None
        except NeovimUnavailable:
            raise
        except Exception as exc:
            raise NeovimCallError(_lua_error_text(exc)) from exc
        finally:
            self._in_flight -= 1

    async def exec_lua(
        self, code: str, *args: Any, timeout_s: float | None = None, what: str = "call"
    ) -> Any:
        return await self.call(lambda: self._nvim.exec_lua(code, *args), timeout_s=timeout_s, what=what)

    def notify_lua(self, code: str, *args: Any) -> None:
        """Fire-and-forget Lua (no answer awaited); safe from any thread."""
        if self._closed:
            return

        def run() -> None:
            try:
                self._nvim.exec_lua(code, *args, async_=True)
            except Exception:
                log.debug("notify_lua failed", exc_info=True)

        self._nvim.async_call(run)


def _resolve(
    fut: concurrent.futures.Future[Any], *, result: Any = None, exc: BaseException | None = None
) -> None:
    """Resolve once; the other thread may have got there first."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)


def _lua_error_text(exc: BaseException) -> str:
    """pynvim's NvimError carries Neovim's message; keep only the readable part."""
    text = str(exc.args[0] if exc.args else exc)
    if isinstance(exc.args[0] if exc.args else None, bytes):
        text = exc.args[0].decode("utf-8", "replace")
    for marker in ("Error executing lua: ", "Lua: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.split("\nstack traceback:", 1)[0].strip()
