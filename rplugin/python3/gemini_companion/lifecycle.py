"""Lifecycle of the companion server inside the Python host.

The server runs on a dedicated daemon thread with its own asyncio loop, so neither side
can stall the other: heavy imports and request handling never run on pynvim's loop, and
a busy Neovim only delays the calls that actually need it. Every state change is pushed
to Lua (`gemini_companion.bridge`), which owns status display and the status line; events from
Lua arrive here, are validated once (`seam.parse_event`) and go on to the server loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from . import seam

if TYPE_CHECKING:
    from .instance import ServerInstance
    from .nvim.gateway import NvimGateway

log = logging.getLogger(__name__)

VERSION = "0.1.0"
# How long a new server thread waits for a stopped one still ending (see start).
PREVIOUS_THREAD_WAIT_S = 5.0
# How long a user's stop waits for the server. Its agents' farewell (OpenCode's) gets most of it: 0.3 s, as
# when Neovim quits (plugin.on_shutdown gives 0.45 s in all), missed it on a loaded machine, and
# OpenCode then still listed this server as connected. An unloaded stop takes ~20-50 ms.
STOP_WAIT_S = 2.0
_OWN_SHUTDOWN_S = 0.15  # of a stop's time, what the server's own shutdown is left (serving.py)
_SERVER_STOP_S = 0.45  # the server's stop at least (its sessions, streams and listener)


class ServerLifecycle:
    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim
        self._lock = threading.RLock()
        self.state = "stopped"  # starting | running | stopping | stopped | failed
        self.last_error: str | None = None
        self.log_file: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: ServerInstance | None = None
        self._stop_requested = threading.Event()
        self._reported_problems: set[str] = set()
        self._renamed_settings: list[tuple[str, str]] = []
        self._push_handle: asyncio.TimerHandle | None = None
        self._push_lock = threading.Lock()
        self._pushes_taken = self._pushes_sent = 0  # push_state's snapshots: taken, last sent
        # The last server's port and token, used again by a :GeminiRestart (StartParams.kept_address).
        self.kept_address: tuple[int, str] | None = None
        # How long the stopping server's farewell to its agents (OpenCode) may take (set by stop; until then
        # Neovim's quitting bound, as before any stop).
        self._farewell_s = _SERVER_STOP_S - _OWN_SHUTDOWN_S
        atexit.register(self._remove_discovery_file)
        _install_signal_cleanup(self._remove_discovery_file)

    # -- commands (called on pynvim's thread) ----------------------------------------------

    def start(self, info: dict[str, Any], *, quiet: bool = False) -> str:
        with self._lock:
            if self.state in ("starting", "running"):
                return f"already {self.state}" + (f" at {self._server.url}" if self._server else "")
            # A stop waits a bounded time for its thread; on a loaded machine that thread may still be
            # letting go of the port. The new thread waits for it, so that a fixed port is free and
            # pynvim's thread is not held.
            previous = self._thread if self._thread is not None and self._thread.is_alive() else None
            self.state, self.last_error = "starting", None
            self._stop_requested.clear()
            self._thread = threading.Thread(
                target=self._thread_main,
                args=(info, quiet, previous),
                name="gemini-companion-server",
                daemon=True,
            )
            self._thread.start()
        self.push_state()
        return "starting"

    def stop(self, timeout_s: float = STOP_WAIT_S, *, keep_token: bool = False) -> str:
        """Stop the server, waiting for it at most `timeout_s`; `keep_token`: a restart, which binds
        the same port again and keeps its token. Any other stop leaves the port free for anyone a
        while, so neither is used again."""
        if not keep_token:
            self.kept_address = None
        # A restart announces itself to the agents again at once: a farewell that one handles after
        # that (OpenCode's registration) would leave it disconnected from the new server. Any other stop gives
        # the farewell what the server's own shutdown leaves of `timeout_s`.
        self._farewell_s = 0.0 if keep_token else max(0.0, timeout_s - _OWN_SHUTDOWN_S)
        with self._lock:
            if self.state in ("stopped", "failed") and self._thread is None:
                return "not running"
            self.state = "stopping"
            self._stop_requested.set()
            loop, thread = self._loop, self._thread
        self.push_state()
        if loop is not None and loop.is_running():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self._lock:
            alive = thread is not None and thread.is_alive()
            if not alive:
                self._thread = None
            self.state = "stopped"
        self._remove_discovery_file()
        self.push_state()
        return "stopped" if not alive else "stopped (the server thread is still finishing)"

    def agent_command(self, action: str, args: list[Any]) -> bool | None:
        """An agent's own command (agents.COMMANDS), its arguments `args`: None if no agent has
        one so named, else whether the server must run for it."""
        from .agents import command

        run = command(action)
        return run(args, self._on_loop) if run is not None else None

    def on_event(self, raw: Any) -> None:
        """An event from Lua on the host's channel (pynvim's thread): validated here, handled on
        the server loop."""
        event = seam.parse_event(raw)
        if event is not None:
            self._on_loop(lambda server: server.on_event(event))

    def _on_channel_event(self, raw: Any) -> None:
        """An event on the server's own channel to Neovim (already on its loop)."""
        event, server = seam.parse_event(raw), self._server
        if event is not None and server is not None:
            server.on_event(event)

    def _on_loop(self, fn: Any) -> None:
        loop, server = self._loop, self._server
        if loop is not None and server is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(fn, server)

    # -- status ----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "state": self.state,
            "error": self.last_error,
            "log_file": self.log_file,
            "host_pid": os.getpid(),
            "version": VERSION,
        }
        server = self._server
        if server is not None and self.state == "running":
            info.update(server.describe())
            info["started_at"] = server.started_at
            info["token_set"] = bool(server.token)
        return info

    def push_state(self) -> None:
        """Send the current snapshot to Lua (fire and forget, from any thread). Snapshots taken on
        two threads can reach pynvim's loop out of order (a start's "starting" after its fast
        server thread's "running", seen on CI): one older than the last sent is dropped."""
        with self._push_lock:
            self._pushes_taken += 1
            number, snapshot = self._pushes_taken, _without_none(self.snapshot())

        def run() -> None:  # on pynvim's loop only
            if number < self._pushes_sent:
                return
            self._pushes_sent = number
            with contextlib.suppress(Exception):
                self._nvim.exec_lua(seam.ON_STATE, snapshot, async_=True)

        with contextlib.suppress(Exception):
            self._nvim.async_call(run)

    def _push_soon(self) -> None:
        # On the server loop: coalesce bursts of client changes into one push.
        loop = self._loop
        if loop is None:
            return
        if self._push_handle is not None:
            self._push_handle.cancel()
        self._push_handle = loop.call_later(0.05, self.push_state)

    # -- the server thread -----------------------------------------------------------------

    def _thread_main(self, info: dict[str, Any], quiet: bool, previous: threading.Thread | None) -> None:
        from .base.logsetup import REDACT

        if previous is not None:
            # Its stop is bounded (~0.6 s); past this wait a fixed port that is still held is said.
            previous.join(PREVIOUS_THREAD_WAIT_S)
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(_log_loop_exception)
        asyncio.set_event_loop(loop)
        self._loop = loop
        server: ServerInstance | None = None
        try:
            t0 = time.perf_counter()
            server = loop.run_until_complete(self._start_server(info))
            ready_ms = (time.perf_counter() - t0) * 1000
            REDACT.secrets.add(server.token)
            server.report = self._notify_user
            with self._lock:
                if self._stop_requested.is_set():
                    raise _StopRequested
                self._server, self.state = server, "running"
            log.info("server ready in %.0f ms", ready_ms)
            # Env vars and User autocmd first, so whoever sees "running" also sees them.
            self._announce(server, quiet, ready_ms)
            self.push_state()
            loop.run_forever()
        except _StopRequested:
            pass
        except BaseException as exc:
            log.exception("server failed")
            with self._lock:
                self.state, self.last_error = "failed", _describe_error(exc)
            self.push_state()
            self._notify_user(f"server failed to start: {self.last_error}", "error")
        finally:
            if server is not None:
                with contextlib.suppress(BaseException):
                    bound = max(_SERVER_STOP_S, self._farewell_s + _OWN_SHUTDOWN_S)
                    loop.run_until_complete(asyncio.wait_for(server.stop(farewell_s=self._farewell_s), bound))
            # A stop waits a bounded time for this thread; a start may follow before it ends (a
            # loaded machine): then the newer thread's server, loop and state are not this one's.
            with self._lock:
                current = self._thread is threading.current_thread()
                if self._server is server:
                    self._server = None
                if current and self.state != "failed":
                    self.state = "stopped"
            # Close the listening socket even if the loop died (clients would hang otherwise).
            with contextlib.suppress(BaseException):
                loop.run_until_complete(_cancel_leftovers(0.1))
            with contextlib.suppress(BaseException):
                loop.run_until_complete(loop.shutdown_asyncgens())
            with contextlib.suppress(BaseException):
                loop.close()
            if server is not None:
                # A stop cut short by its bound (a loaded machine) may not have reached the listening
                # socket: closed here, before a restart's thread, which waits for this one, binds it.
                with contextlib.suppress(BaseException):
                    server.close_listener()
            if self._loop is loop:
                self._loop = None
            if current:
                self.push_state()

    async def _start_server(self, info: dict[str, Any]) -> ServerInstance:
        # Heavy imports (aiohttp, mcp, pydantic) happen here, on this thread, never on pynvim's.
        from .http.lean_import import import_lean

        import_lean()
        from .config import load_config, renamed_settings
        from .instance import ServerInstance, StartParams
        from .nvim.gateway import NvimGateway
        from .seam import StartInfo

        start = StartInfo.parse(info)
        config, problems = load_config(start.config)
        self._renamed_settings = renamed_settings(start.config)
        self._report_config_problems(problems)
        _set_log_level(config.log_level)
        gateway: NvimGateway = NvimGateway(
            self._nvim, timeout_s=config.tool_timeout_s, max_in_flight=config.max_in_flight
        )
        gateway.on_event = self._on_channel_event
        params = StartParams(
            config=config,
            cwd=start.cwd or os.getcwd(),
            nvim_pid=start.pid,
            nvim_ppid=start.ppid,
            env={k: v for k, v in start.env.items() if isinstance(v, str)},
            lua_tools=start.tools,
            version=VERSION,
            state_dir=start.state_dir,
            servername=start.servername,
            kept_address=self.kept_address,
        )
        server = ServerInstance(params, gateway, on_change=self._push_soon)
        self.kept_address = None  # until the port is ours: a refused one may be another user's
        await server.start()
        self.kept_address = (server.port, server.token)
        return server

    def _announce(self, server: ServerInstance, quiet: bool, ready_ms: float) -> None:
        from .config import editor_settings

        described = server.describe(include_clients=False)
        details = {
            "url": server.url,
            "port": server.port,
            "pid": server.params.ide_pid,
            "discovery_file": described.get("discovery_file"),
            "token": server.token,
            "workspace": server.workspace_roots(),
            "workspace_path": described.get("workspace_path"),
            "ready_ms": round(ready_ms, 1),
            "quiet": quiet,
            # Validated settings for the editor half (context tracking, reviews, :GeminiChanges), and
            # the old settings the user set, each with its new name (:checkhealth names them).
            "settings": editor_settings(server.config, self._renamed_settings),
        }
        for agent in server.agents:  # what Neovim's children need to find us (agents.Agent.ready)
            agent.ready(details)
        self._lua_async(seam.ON_READY, _without_none(details))
        if described.get("discovery_error"):
            self._notify_user(described["discovery_error"], "warn")

    def _report_config_problems(self, problems: list[str]) -> None:
        fresh = [p for p in problems if p not in self._reported_problems]
        if fresh:
            self._reported_problems.update(fresh)
            text = "invalid settings (defaults used):\n  " + "\n  ".join(fresh)
            self._notify_user(text, "warn")

    def _notify_user(self, message: str, level: str) -> None:
        self._lua_async(seam.NOTIFY, message, level)

    def _lua_async(self, code: str, *args: Any) -> None:
        def run() -> None:
            with contextlib.suppress(Exception):
                self._nvim.exec_lua(code, *args, async_=True)

        with contextlib.suppress(Exception):
            self._nvim.async_call(run)

    def _remove_discovery_file(self) -> None:
        server = self._server
        if server is not None:
            server.remove_files()


def _without_none(value: Any) -> Any:
    """Lua sees None as vim.NIL (truthy userdata): leave such keys out instead."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class _StopRequested(Exception):
    pass


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


async def _cancel_leftovers(timeout: float) -> None:
    """Tasks the server's stop left behind (an SDK session's, a client's drain) are cancelled and
    given a moment to unwind, so none is destroyed pending when the loop closes. Bounded: quitting
    Neovim is never held up."""
    me = asyncio.current_task()
    leftovers = [t for t in asyncio.all_tasks() if t is not me]
    for task in leftovers:
        task.cancel()
    if leftovers:
        await asyncio.wait(leftovers, timeout=timeout)


def _log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    # Never let asyncio print to stderr: Neovim keeps the host's stderr in memory.
    exc = context.get("exception")
    task = context.get("task") or context.get("future")
    log.error("event loop: %s%s", context.get("message"), f" ({task!r})" if task else "", exc_info=exc)


def _set_log_level(name: str) -> None:
    logging.getLogger("gemini_companion").setLevel(name.upper())


def _install_signal_cleanup(cleanup: Any) -> None:
    """Remove the discovery file on SIGTERM/SIGHUP too, then let the signal do what it did."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(signum)

        def handler(sig: int, frame: Any, previous: Any = previous) -> None:
            with contextlib.suppress(Exception):
                cleanup()
            if callable(previous):
                previous(sig, frame)
            else:
                signal.signal(sig, signal.SIG_DFL)
                os.kill(os.getpid(), sig)

        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, handler)
