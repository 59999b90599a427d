"""The server thread's life: a start that follows a stop before the stopped thread has ended, the
state Lua is shown, and how long a stop gives the farewell to OpenCode."""

import asyncio
import threading
from typing import Any

import pytest
from gemini_companion.lifecycle import ServerLifecycle

from tests.support.helpers import wait_for


class NoNeovim:
    """What the lifecycle asks of pynvim's Nvim here: nothing that needs a Neovim."""

    def async_call(self, fn: Any, *args: Any) -> None:
        pass


class SlowStoppingServer:
    """A server (as ServerInstance to the lifecycle) whose stop outlasts a 0.5 s wait by stop(), as
    a loaded machine's did (its farewell to OpenCode, its sessions) when Neovim quit."""

    # A token as long as a real one: the lifecycle adds it to the log's redaction list, which
    # lives as long as the process (a one-letter token would redact "t" in later tests' logs).
    token, url, port = "a-stand-in-token-as-long-as-a-real-one", "http://127.0.0.1:1/mcp", 1
    report: Any = None

    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = False  # the port let go

    async def stop(self, farewell_s: float = 0.3) -> None:
        await asyncio.sleep(0.4)  # within the thread's own 0.45 s for it
        threading.Event().wait(0.6)  # and then its thread still busy: stop() gives up waiting
        self.stopped = True

    def remove_files(self) -> None:
        pass

    def close_listener(self) -> None:
        pass


class Lifecycle(ServerLifecycle):
    def __init__(self) -> None:
        super().__init__(NoNeovim())
        self.started: list[SlowStoppingServer] = []
        self.port_was_free = True

    async def _start_server(self, info: dict[str, Any]) -> Any:
        # A fixed port is free only once every earlier server has stopped.
        self.port_was_free = all(earlier.stopped for earlier in self.started)
        server = SlowStoppingServer(f"server {len(self.started) + 1}")
        self.started.append(server)
        return server

    def _announce(self, server: Any, quiet: bool, ready_ms: float) -> None:
        pass

    def push_state(self) -> None:
        pass


def test_a_start_right_after_a_stop_waits_for_the_port_and_keeps_its_server() -> None:
    life = Lifecycle()
    life.start({})
    wait_for(lambda: life.state == "running", 5, what="first server running")
    first_thread = life._thread
    assert life.stop(timeout_s=0.5) == "stopped (the server thread is still finishing)"
    life.start({})
    wait_for(lambda: life.state == "running" and len(life.started) == 2, 5, what="second server running")
    assert first_thread is not None
    first_thread.join(5)  # the first thread ends now: the second's server, loop and state stay
    assert (life.state, life._server, life._loop is not None) == ("running", life.started[1], True)
    assert life.port_was_free  # the second server bound the port after the first let it go
    life.stop(timeout_s=5)
    assert life.state == "stopped" and life._loop is None and life._server is None


class QueuedNeovim:
    """pynvim's Nvim as push_state uses it: async_call queues, exec_lua records what Lua gets."""

    def __init__(self) -> None:
        self.queued: list[Any] = []
        self.states: list[str] = []

    def async_call(self, fn: Any, *args: Any) -> None:
        self.queued.append(fn)

    def exec_lua(self, code: str, snapshot: dict[str, Any], async_: bool) -> None:
        self.states.append(snapshot["state"])


def test_a_state_pushed_earlier_but_delivered_later_is_not_shown() -> None:
    nvim = QueuedNeovim()
    life = ServerLifecycle(nvim)
    life.state = "starting"
    life.push_state()
    life.state = "running"
    life.push_state()
    later, earlier = nvim.queued[1], nvim.queued[0]
    later()
    earlier()  # "starting" reaches pynvim's loop last: Lua keeps "running"
    assert nvim.states == ["running"]
    life.state = "stopped"
    life.push_state()
    nvim.queued[-1]()
    assert nvim.states == ["running", "stopped"]


class FarewellServer(SlowStoppingServer):
    """Records how long its stop was given for the farewell to OpenCode."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.farewell_s: float | None = None

    async def stop(self, farewell_s: float = 0.3) -> None:
        self.farewell_s = farewell_s
        self.stopped = True


class FarewellLifecycle(Lifecycle):
    async def _start_server(self, info: dict[str, Any]) -> Any:
        server = FarewellServer(f"server {len(self.started) + 1}")
        self.started.append(server)
        return server


def test_a_users_stop_gives_opencode_time_to_hear_it_quitting_stays_bounded_a_restart_says_nothing() -> None:
    life = FarewellLifecycle()
    farewells = []
    for stop in (life.stop, lambda: life.stop(timeout_s=0.45), lambda: life.stop(keep_token=True)):
        life.start({})
        wait_for(lambda: life.state == "running", 5, what="running")
        assert stop() == "stopped"
        farewells.append(life.started[-1].farewell_s)
    # :GeminiStop: most of STOP_WAIT_S (0.3 s missed a loaded OpenCode); Neovim quitting: 0.3 s.
    assert farewells == [pytest.approx(1.85), pytest.approx(0.3), 0.0]
