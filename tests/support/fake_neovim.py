"""FakeNeovim: what the server's gateway talks to in the in-process tier (tests/protocol/).

It follows the real seam, and only it: the server reaches it through `gateway.NvimLike`
(`async_call`, `exec_lua`, `request`) exactly as it reaches pynvim, each Lua entry point of
`seam.py` is answered as `lua/gemini_companion/bridge.lua` answers it, with values that validate
as seam.py's reply models (`StartInfo`, `ToolReply`, `OpenedReview`, `ClosedReview`, ...), and
what Lua sends back (`ToolDone`, `ReviewDecided`, ...) goes in as a `seam.Event` through the
lifecycle's `on_event`, as plugin.py's `gemini_companion_event` export does.
tests/protocol/test_fake_contract.py runs the same seam calls against a real Neovim and this
fake, and fails when the shapes of their replies differ: change both together.

Scriptable per test: `add_tool` (a tool that answers, fails, hangs, or answers later),
`reviews` (what the "user" sees), `decide` (the user accepts or rejects a review), `prompt` and
`answer_prompt` (Neovim waits at a hit-enter prompt; a busy Lua is a tool or `async_call` that blocks).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import logging
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gemini_companion import seam

from tests.support.helpers import Discovery, wait_for

# A tool's `execute` as Lua's tools.call runs it: a synchronous one returns a JSON-able value (sent
# as `json`) or a string (as `text`), or raises `ToolFailure` (an error()); an asynchronous one is
# given `done(result, error)` too, which it calls now or later (from any thread), or never.
ToolHandler = Callable[..., Any]
Done = Callable[..., None]


class ToolFailure(Exception):
    """Raised by a fake tool: the tool's error(), answered as `{ok = false, error = message}`."""


@dataclass
class FakeTool:
    """A Lua tool as `tools.lua` registers it (`M.specs()`'s fields), answering with `handler`.
    `is_async`: `handler(args, done)`; the call answers `{pending}` unless `done` came at once,
    and the result later (`ToolDone`). A `handler` that blocks is a Neovim busy in Lua: nothing
    else runs meanwhile, as in Neovim."""

    name: str
    handler: ToolHandler
    description: str = ""
    input_schema: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": False}
    )
    read_only: bool = True
    group: str = "user"
    is_async: bool = False
    timeout_ms: int | None = None

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "readOnly": self.read_only,
            "group": self.group,
            "async": self.is_async,
        }
        if self.timeout_ms is not None:
            spec["timeout_ms"] = self.timeout_ms
        return spec


@dataclass
class FakeReview:
    """A review the "user" has open: what Lua's review.open was given."""

    path: str
    content: str
    id: int | None
    client: str
    channel: int | None
    carries_reason: bool


def encode(result: Any) -> dict[str, Any]:
    """tools.lua's `encode`: nothing is empty text, a string is text, anything else JSON."""
    if result is None:
        return {"ok": True, "text": ""}
    if isinstance(result, str):
        return {"ok": True, "text": result}
    return {"ok": True, "json": json.dumps(result)}


class FakeNeovim:
    """A Neovim as the server sees it through the seam (see the module's docstring)."""

    def __init__(self, base: Path, *, config: dict[str, Any] | None = None, pid: int = 0) -> None:
        self.tmpdir, self.state_dir, self.workspace = base / "tmp", base / "state", base / "workspace"
        self.claude_dir = base / "claude"
        for d in (self.tmpdir, self.state_dir, self.workspace):
            d.mkdir(parents=True, exist_ok=True)
        self.config: dict[str, Any] = dict(config or {})
        # More of Neovim's environment, as START_INFO passes it (bridge.lua's list:
        # OPENCODE_SERVER_PASSWORD, ...).
        self.environ: dict[str, str] = {}
        self.pid = pid or os.getpid()
        self.tools: dict[str, FakeTool] = {}
        self.reviews: dict[str, FakeReview] = {}
        self.status: dict[str, Any] = {
            "state": "stopped"
        }  # what `require('gemini_companion').status()` returns
        self.ready: dict[str, Any] | None = None  # ON_READY's details
        self.notifications: list[tuple[str, str]] = []
        self.calls: list[tuple[str, tuple[Any, ...]]] = []  # every entry point called, in order
        self.cancelled: list[tuple[int, str]] = []
        self.turns_ended: list[str] = []
        self.released: list[tuple[str, str | None]] = []
        # The lifecycle's on_event: where what Lua sends on the host's channel goes (plugin.py).
        self.send_event: Callable[[Any], None] = lambda _raw: None
        self.limits: dict[str, Any] | None = None  # CONFIGURE_TOOLS's: none yet, no review opens
        self._pending_calls: dict[int, FakeTool] = {}
        self._lock = threading.Lock()
        # pynvim's loop: one thread, every call in order (a busy Lua holds up the rest).
        self._work: queue.Queue[Callable[[], None] | None] = queue.Queue()
        # At a hit-enter prompt (`prompt`): `nvim_get_mode` says so at once, Lua runs only once the
        # user answers (`answer_prompt`).
        self._answered = threading.Event()
        self._answered.set()
        self._parked = threading.local()
        self._thread = threading.Thread(target=self._run, name="fake-neovim", daemon=True)
        self._thread.start()
        self.add_tool(
            FakeTool("nvim_info", self._nvim_info, "Facts about the running Neovim.", group="editor")
        )

    # -- scripting -------------------------------------------------------------------------

    def add_tool(self, tool: FakeTool) -> None:
        """Register a tool (as `require('gemini_companion').register` does, the ToolsChanged event included
        once a server runs)."""
        with self._lock:
            self.tools[tool.name] = tool
        if self.status.get("state") == "running":
            self.send_event({"type": "tools", "tools": self.tool_specs()})

    def tool_specs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [t.spec() for t in self.tools.values()]

    def pending_calls(self) -> list[int]:
        """The asynchronous calls not answered yet (nor cancelled)."""
        with self._lock:
            return list(self._pending_calls)

    def decide(
        self, path: str, action: str, *, content: str | None = None, comments: str | None = None
    ) -> None:
        """The user accepts (`:w`; `content` defaults to the proposal) or rejects a review: Lua's
        `to_host.review_decided`, on the host's channel."""
        review = self.reviews.pop(path)
        if action == "accepted" and content is None:
            content = review.content
        event: dict[str, Any] = {"type": "review", "action": action, "path": path}
        for key, value in (("id", review.id), ("content", content), ("comments", comments)):
            if value is not None:
                event[key] = value  # Lua's nil fields are not sent
        self.send_event(event)

    def prompt(self) -> None:
        """Neovim waits for the user at a hit-enter prompt ("Press ENTER")."""
        self._answered.clear()

    def answer_prompt(self) -> None:
        self._answered.set()

    def change_directory(self, path: Path) -> None:
        """`:cd path`: Lua's DirChanged event; a later START_INFO gives it as the cwd."""
        self.workspace = path
        self.send_event({"type": "dirchanged", "cwd": str(path)})

    def close(self) -> None:
        self._answered.set()
        self._work.put(None)
        self._thread.join(5)

    # -- gateway.NvimLike ------------------------------------------------------------------

    def async_call(self, fn: Callable[..., Any], *args: Any) -> None:
        self._work.put(lambda: fn(*args))

    def exec_lua(self, code: str, *args: Any, **kwargs: Any) -> Any:
        handler = self._entry_points.get(code)
        if handler is None:
            raise RuntimeError(f"Error executing lua: the fake Neovim does not answer {code!r}")
        if not self._answered.is_set():  # at a prompt: Lua runs once the user answers
            parked = getattr(self._parked, "event", None)
            if parked is not None:
                parked.set()  # the loop goes on with the next call meanwhile
            self._answered.wait()
        self.calls.append((code, args))
        return handler(self, *args)

    def request(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "nvim_get_mode":  # answered even at a prompt (a "fast" API call)
            at_prompt = not self._answered.is_set()
            return {"mode": "r" if at_prompt else "n", "blocking": at_prompt}
        if name == "nvim_exec_lua":
            return self.exec_lua(args[0], *args[1])
        raise RuntimeError(f"the fake Neovim does not answer {name}")

    def _run(self) -> None:
        while (fn := self._work.get()) is not None:
            if self._answered.is_set():
                with contextlib.suppress(Exception):  # as pynvim: a failed callback does not end the loop
                    fn()
            else:
                self._run_at_prompt(fn)

    def _run_at_prompt(self, fn: Callable[[], None]) -> None:
        """As pynvim's greenlets: a call that waits for Neovim (parked until the prompt is answered)
        lets the loop go on with the next one, so a mode probe after it is still answered."""
        settled = threading.Event()

        def run() -> None:
            self._parked.event = settled
            try:
                with contextlib.suppress(Exception):
                    fn()
            finally:
                settled.set()

        threading.Thread(target=run, name="fake-neovim-parked", daemon=True).start()
        settled.wait()

    # -- bridge.lua's entry points ---------------------------------------------------------

    def start_info(self) -> dict[str, Any]:
        env = {
            "TMPDIR": str(self.tmpdir),
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "HOME": str(self.workspace.parent),
            **self.environ,
        }
        return {
            "config": self.config,
            "cwd": str(self.workspace),
            "pid": self.pid,
            "ppid": 1,
            "env": env,
            "state_dir": str(self.state_dir),
            "tools": self.tool_specs(),
            "servername": "",  # no listen address: calls come through pynvim's (our) loop
        }

    def _on_state(self, snapshot: dict[str, Any]) -> None:
        self.status = snapshot

    def _on_ready(self, details: dict[str, Any]) -> None:
        self.ready = details

    def _notify(self, message: str, level: str) -> None:
        self.notifications.append((message, level))

    def _call_tool(
        self, name: str, args: dict[str, Any], call_id: int, channel: Any = None
    ) -> dict[str, Any]:
        with self._lock:
            tool = self.tools.get(name)
        if tool is None:
            return {"ok": False, "error": f'unknown tool "{name}"'}
        if tool.is_async:
            return self._call_async(tool, args, call_id)
        try:
            return encode(tool.handler(args))
        except ToolFailure as exc:
            return {"ok": False, "error": str(exc)}

    def _call_async(self, tool: FakeTool, args: dict[str, Any], call_id: int) -> dict[str, Any]:
        """tools.lua's asynchronous call: `done` inside `execute` answers now, later a ToolDone
        event; a second or late (cancelled) answer is ignored."""
        inside, immediate = True, []

        def done(result: Any = None, error: str | None = None) -> None:
            with self._lock:
                if self._pending_calls.pop(call_id, None) is None:
                    return
            reply = {"ok": False, "error": error} if error is not None else encode(result)
            if inside:
                immediate.append(reply)
            else:
                self.send_event({"type": "tool_done", "id": call_id, "reply": reply})

        with self._lock:
            self._pending_calls[call_id] = tool
        try:
            tool.handler(args, done)
        except ToolFailure as exc:
            with self._lock:
                if self._pending_calls.pop(call_id, None) is not None:
                    return {"ok": False, "error": str(exc)}
        finally:
            inside = False
        return immediate[0] if immediate else {"pending": True}

    def _cancel_tool(self, call_id: int, reason: str) -> None:
        with self._lock:
            if self._pending_calls.pop(call_id, None) is None:
                return
        self.cancelled.append((call_id, reason))

    def _open_review(  # noqa: PLR0917 (bridge.open_review's arguments, as Python sends them)
        self,
        path: str,
        content: str,
        proposal_id: int | None = None,
        client: str = "",
        channel: Any = None,
        expires: Any = None,
        carries_reason: Any = None,
    ) -> dict[str, Any]:
        if self.limits is None:
            return {"ok": False, "error": "the server has not configured the tools yet (:GeminiStart)"}
        self.reviews[path] = FakeReview(
            path,
            content,
            proposal_id,
            client,
            channel if isinstance(channel, int) else None,
            carries_reason is True,
        )
        return {"ok": True}

    def _close_review(self, path: str, proposal_id: int | None = None) -> dict[str, Any]:
        review = self.reviews.get(path)
        if review is None or (proposal_id is not None and review.id != proposal_id):
            return {"found": False}
        del self.reviews[path]
        return {"found": True, "content": review.content}

    def _release_review(self, path: str, why: str | None = None) -> None:
        if self.reviews.pop(path, None) is not None:
            self.released.append((path, why))

    def _nvim_info(self, _args: dict[str, Any]) -> dict[str, Any]:
        return {"version": "fake", "pid": self.pid, "cwd": str(self.workspace), "mode": "n", "buffers": 1}

    _entry_points: ClassVar[dict[str, Callable[..., Any]]] = {
        seam.START_INFO: start_info,
        seam.ON_STATE: _on_state,
        seam.ON_READY: _on_ready,
        seam.NOTIFY: _notify,
        seam.CONFIGURE_TOOLS: lambda self, limits: setattr(self, "limits", limits),
        seam.CALL_TOOL: _call_tool,
        seam.CANCEL_TOOL: _cancel_tool,
        seam.OPEN_REVIEW: _open_review,
        seam.CLOSE_REVIEW: _close_review,
        seam.RELEASE_REVIEW: _release_review,
        seam.TURN_ENDED: lambda self, agent: self.turns_ended.append(agent),
        seam.AGENT_TOOL: lambda _self, agent, name, _args: {
            "error": f"the fake Neovim has no {agent} tool {name}"
        },
    }


# -- the real server with it, in this process ------------------------------------------------
#
# Running the server in-process touches the process: the lifecycle's signal handlers and atexit
# hook, the log level, the token in the log filter, the SDK's process-wide keep-alive, the C
# allocator's threshold, the lean imports of mcp and aiohttp. Each is put back (the allocator's is
# kept off) for the pytest process only: the code under test runs as it does in the host.


@dataclass
class InProcessServer:
    """The server under test and the fake Neovim behind it."""

    fake: FakeNeovim
    lifecycle: Any  # gemini_companion.lifecycle.ServerLifecycle

    def discovery(self) -> Discovery:
        """The Gemini CLI discovery file in the fake Neovim's TMPDIR, as a client reads it."""
        (path,) = (self.fake.tmpdir / "gemini" / "ide").glob("gemini-ide-server-*.json")
        data = json.loads(path.read_text(encoding="utf-8"))
        return Discovery(path, data["port"], data["authToken"], data["workspacePath"], data)

    @property
    def port(self) -> int:
        return int(self.status()["port"])

    @property
    def token(self) -> str:
        assert self.fake.ready is not None
        return str(self.fake.ready["token"])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log_text(self) -> str:
        """The host's log file (gemini_companion.log), as `Neovim.log_text` reads it."""
        path = Path(self.lifecycle.log_file)
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def status(self) -> dict[str, Any]:
        """What Lua's `require('gemini_companion').status()` would show: the last state pushed."""
        return self.fake.status

    def command(self, action: str) -> str:
        """`:GeminiStart`, `:GeminiStop` or `:GeminiRestart`, as plugin.py's GeminiCompanionCall runs it."""
        if action == "start":
            return str(self.lifecycle.start(self.fake.exec_lua(seam.START_INFO)))
        if action == "stop":
            return str(self.lifecycle.stop())
        if action == "restart":
            self.lifecycle.stop(keep_token=True)
            return str(self.lifecycle.start(self.fake.exec_lua(seam.START_INFO)))
        raise ValueError(f"no command {action!r}")

    def restart(self) -> None:
        """`:GeminiRestart`, and wait until the new server runs."""
        started = self.status().get("started_at")
        self.command("restart")
        wait_for(
            lambda: (s := self.status()).get("state") == "running" and s.get("started_at") != started,
            20,
            what="running again",
        )

    def wait_state(self, state: str, timeout: float = 20.0) -> dict[str, Any]:
        return wait_for(
            lambda: self.status() if self.status().get("state") == state else None, timeout, what=state
        )

    # -- the Lua commands that reach the host, as plugin.py's GeminiCompanionCall runs them --------

    def agent_command(self, action: str, *args: Any) -> None:
        """An agent's command: `:GeminiOpencodeRegister url` is ("opencode_register", url, True)."""
        if self.lifecycle.agent_command(action, list(args)) and self.lifecycle.state not in (
            "starting",
            "running",
        ):
            self.lifecycle.start(self.fake.exec_lua(seam.START_INFO), quiet=True)


@contextlib.contextmanager
def _process_kept(log_dir: Path, pid: int) -> Iterator[str]:
    """Put back what a server started in this process changes process-wide. Yields the log file:
    the host's own logging (logsetup.setup_file_logging, its token filter included), here."""
    from gemini_companion.agents import opencode
    from gemini_companion.base import heap, logsetup
    from sse_starlette import EventSourceResponse

    # import_lean leaves packages imported already alone: import them whole, as other tests expect.
    for name in ("mcp", "mcp.server", "aiohttp"):
        importlib.import_module(name)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    loggers = [
        logging.getLogger(),
        logging.getLogger("gemini_companion"),
        logging.getLogger("aiohttp.server"),
    ]
    levels, filters = [lg.level for lg in loggers], [list(lg.filters) for lg in loggers]
    ping, secrets = EventSourceResponse.DEFAULT_PING_INTERVAL, set(logsetup.REDACT.secrets)
    keep_apart = heap.keep_big_blocks_apart
    heap.keep_big_blocks_apart = lambda: None  # the allocator of pytest's process, not the host's
    own_log = logsetup._handler is None  # one log file per process: a nested server shares it
    opencode_targets = dict(opencode.TARGETS)  # the host's OpenCode servers, kept across restarts
    try:
        yield logsetup.setup_file_logging(str(log_dir), pid)
    finally:
        if own_log and logsetup._handler is not None:
            logging.getLogger().removeHandler(logsetup._handler)
            logsetup._handler.close()
            logsetup._handler = None
        for logger, level, kept in zip(loggers, levels, filters, strict=True):
            logger.setLevel(level)
            logger.filters[:] = kept
        heap.keep_big_blocks_apart = keep_apart
        opencode.TARGETS.clear()
        opencode.TARGETS.update(opencode_targets)
        logsetup.REDACT.secrets.intersection_update(secrets)
        EventSourceResponse.DEFAULT_PING_INTERVAL = ping
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def serve(
    base: Path,
    *,
    config: dict[str, Any] | None = None,
    setup: Callable[[FakeNeovim], None] | None = None,
    until: str = "running",
    pid: int = 0,
) -> Iterator[InProcessServer]:
    """A started server with a FakeNeovim in `base` (its TMPDIR, state dir, workspace), once its
    state is `until` ("failed": a start that must fail); stopped after, as when Neovim quits.
    `pid`: Neovim's (default this process's, which is the host's too here)."""
    from gemini_companion.lifecycle import ServerLifecycle

    fake = FakeNeovim(base, config=config, pid=pid)
    if setup is not None:
        setup(fake)
    with _process_kept(fake.state_dir / "log", fake.pid) as log_file:
        lifecycle = ServerLifecycle(fake)
        lifecycle.log_file = log_file
        atexit.unregister(lifecycle._remove_discovery_file)
        fake.send_event = lifecycle.on_event  # plugin.py's gemini_companion_event export
        try:
            lifecycle.start(fake.exec_lua(seam.START_INFO))
            server = InProcessServer(fake, lifecycle)
            wait_for(
                lambda: fake.ready is not None or server.status().get("state") == "failed", 20, what="ready"
            )
            server.wait_state(until)
            yield server
        finally:
            lifecycle.stop()
            fake.close()
