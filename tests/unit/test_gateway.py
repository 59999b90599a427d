"""The gateway's own rules (timeouts, the in-flight cap, prompt detection) against a scripted
stand-in for pynvim's thread-safe entry point; the real Neovim path is in the integration tests."""

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from gemini_companion.nvim.gateway import NeovimCallError, NeovimUnavailable, NvimGateway

from tests.support.helpers import until


class ScriptedNvim:
    """Runs async_call callbacks on another thread, like pynvim's loop does."""

    def __init__(self) -> None:
        self.delay = 0.0  # pynvim's loop busy: callbacks start late
        self.lua_block = 0.0  # Neovim busy or at a prompt: exec_lua answers late
        self.mode: dict[str, Any] = {"mode": "n", "blocking": False}
        self.ran: list[str] = []
        self.asked = 0  # callbacks handed to async_call
        self.started = 0  # of those, begun on the other thread

    def async_call(self, fn: Callable[..., Any], *args: Any) -> None:
        self.asked += 1
        threading.Timer(self.delay, self._start, (fn, *args)).start()

    def _start(self, fn: Callable[..., Any], *args: Any) -> None:
        self.started += 1
        fn(*args)

    def exec_lua(self, code: str, *args: Any, **kwargs: Any) -> Any:
        self.ran.append(code)
        time.sleep(self.lua_block)
        if code == "error":
            raise RuntimeError("Error executing lua: [string]:1: boom\nstack traceback:\n...")
        return args[0] if args else None

    def request(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.mode


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_result_and_lua_error() -> None:
    gw = NvimGateway(ScriptedNvim(), timeout_s=1, max_in_flight=4)
    assert run(gw.exec_lua("x", 42)) == 42
    with pytest.raises(NeovimCallError, match=r"^\[string\]:1: boom$"):
        run(gw.exec_lua("error"))


def test_calls_the_caller_gave_up_on_are_never_sent() -> None:
    nvim = ScriptedNvim()
    gw = NvimGateway(nvim, timeout_s=0.2, max_in_flight=4)

    async def scenario() -> None:
        nvim.delay = 0.6
        with pytest.raises(NeovimUnavailable, match=r"timed out after 0\.2 s"):
            await gw.exec_lua("late")
        await until(lambda: nvim.started == 1, what="the late callback's turn")
        assert "late" not in nvim.ran

    run(scenario())


def test_timeout_names_the_prompt_and_later_callers_are_told_at_once() -> None:
    nvim = ScriptedNvim()
    gw = NvimGateway(nvim, timeout_s=0.2, max_in_flight=4)

    async def scenario() -> None:
        nvim.lua_block = 0.5
        nvim.mode = {"mode": "r", "blocking": True}
        with pytest.raises(NeovimUnavailable, match="waiting for the user at a prompt"):
            await gw.exec_lua("x")
        t0 = time.monotonic()
        with pytest.raises(NeovimUnavailable, match="prompt"):
            await gw.exec_lua("x")
        assert time.monotonic() - t0 < 0.1
        nvim.lua_block = 0.0
        nvim.mode = {"mode": "n", "blocking": False}
        assert await gw.exec_lua("x", 1) == 1

    run(scenario())


def test_excess_calls_are_rejected_at_once() -> None:
    nvim = ScriptedNvim()
    nvim.delay = 0.3
    gw = NvimGateway(nvim, timeout_s=2, max_in_flight=2)

    async def scenario() -> list[Any]:
        return await asyncio.gather(*(gw.exec_lua("x", i) for i in range(3)), return_exceptions=True)

    results = run(scenario())
    assert results[:2] == [0, 1]
    assert isinstance(results[2], NeovimUnavailable) and "too many calls" in str(results[2])


def test_close_fails_pending_calls() -> None:
    nvim = ScriptedNvim()
    nvim.delay = 1.0
    gw = NvimGateway(nvim, timeout_s=5, max_in_flight=4)

    async def scenario() -> None:
        task = asyncio.ensure_future(gw.exec_lua("x"))
        await until(lambda: nvim.asked == 1, what="the call handed to pynvim")
        gw.close()
        with pytest.raises(NeovimUnavailable, match="stopping"):
            await task
        with pytest.raises(NeovimUnavailable):
            await gw.exec_lua("y")

    run(scenario())
