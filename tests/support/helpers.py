"""Test helpers: a real headless Neovim started through the same bootstrap as `make run`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pynvim

ROOT = Path(__file__).resolve().parents[2]
DEV_NVIM = ROOT / "dev" / "nvim"
# `make stress` points this elsewhere to collect its own figures.
BENCH_LOG = Path(os.environ.get("GEMINI_COMPANION_FIGURES") or ROOT / "bench" / "test-figures.jsonl")

T = TypeVar("T")


def initialize_body(client_name: str, protocol: str = "2025-06-18") -> bytes:
    """The JSON body of an MCP initialize request, for tests that speak raw HTTP."""
    params = {
        "protocolVersion": protocol,
        "capabilities": {},
        "clientInfo": {"name": client_name, "version": "1"},
    }
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()


async def raw_request(
    port: int, method: str = "POST", headers: dict[str, str] | None = None, data: bytes | None = None
) -> tuple[int, str]:
    """(status, body) of one bare HTTP request to /mcp: no client library's own headers."""
    import aiohttp

    async with (
        aiohttp.ClientSession(skip_auto_headers=("User-Agent",)) as http,
        http.request(method, f"http://127.0.0.1:{port}/mcp", headers=headers or {}, data=data) as resp,
    ):
        return resp.status, await resp.text()


def connects(url: str, token: str) -> bool:
    """Whether an MCP client with `token` gets a tool call answered at `url`."""

    async def go() -> bool:
        async with mcp_client(url, token) as client:
            result = await client.call_tool("nvim_info", {})
            return not result.is_error

    return asyncio.run(go())


def wait_for(predicate: Callable[[], T], timeout: float = 15.0, interval: float = 0.05, what: str = "") -> T:
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # the condition may raise until it holds
            last_exc = exc
        time.sleep(interval)
    raise AssertionError(
        f"timed out waiting for {what or predicate}" + (f" (last error: {last_exc!r})" if last_exc else "")
    )


def answer(nvim: Any, key: str, what: str = "the question") -> None:
    """Press `key` once Neovim waits for it (a one-key question: keys typed before it shows would go
    to whatever mode Neovim is in)."""
    # getcharstr() in a scheduled callback leaves nvim_get_mode() as it was: notify.lua says so.
    wait_for(lambda: nvim.lua("return require('gemini_companion.notify').asking"), what=what)
    nvim.api.input(key)


async def until(predicate: Callable[[], T], timeout: float = 15.0, what: str = "") -> T:
    """wait_for from asyncio code; the predicate runs on the loop, so it must not block (pynvim would:
    use `await asyncio.to_thread(wait_for, ...)` for conditions that ask Neovim)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what or predicate}")


@dataclass
class Discovery:
    path: Path
    port: int
    token: str
    workspace: str
    data: dict[str, Any]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def record_figure(name: str, **values: Any) -> None:
    """Append a measured figure to the benchmark log (figures are reported, never asserted)."""
    BENCH_LOG.parent.mkdir(exist_ok=True)
    with BENCH_LOG.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"name": name, "at": time.time(), **values}) + "\n")


class Neovim:
    """A headless Neovim with the plugin, in its own TMPDIR, state dir and workspace."""

    def __init__(
        self,
        base: Path,
        *,
        init_lua: str = "",
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        tmpdir: Path | None = None,
        nvim_cmd: list[str] | None = None,
    ) -> None:
        self.base = base
        # Default: the bootstrap's isolated config; tests of installing give a plain nvim and own XDG dirs.
        self.nvim_cmd = nvim_cmd or [str(DEV_NVIM)]
        self.tmpdir = tmpdir or base / "tmp"
        self.state = base / "state"
        self.workspace = cwd or base / "workspace"
        for d in (self.tmpdir, self.state, self.workspace):
            d.mkdir(parents=True, exist_ok=True)
        self.sock = base / "nvim.sock"
        self.init_file = base / "test_init.lua"
        self.init_file.write_text(_CAPTURE_NOTIFY + init_lua, encoding="utf-8")
        self.env = {
            **os.environ,
            "TMPDIR": str(self.tmpdir),
            "XDG_STATE_HOME": str(self.state),
            "GEMINI_COMPANION_DEV_INIT": str(self.init_file),
            # Claude Code's lock files go here, not into the developer's own ~/.claude.
            "CLAUDE_CONFIG_DIR": str(base / "claude"),
            **(env or {}),
        }
        for name in (
            "GEMINI_CLI_IDE_SERVER_PORT",
            "GEMINI_CLI_IDE_PID",
            "GEMINI_CLI_IDE_WORKSPACE_PATH",
            "GEMINI_CLI_IDE_AUTH_TOKEN",
            "CLAUDE_CODE_SSE_PORT",
            "NVIM",
            "NVIM_LISTEN_ADDRESS",
        ):
            self.env.pop(name, None)
        self.proc: subprocess.Popen[bytes] | None = None
        self._api: pynvim.Nvim | None = None
        self.started_at = 0.0

    # -- process ---------------------------------------------------------------------------

    def _try_attach(self) -> bool:
        if not self.sock.exists():
            return False
        try:
            self._api = pynvim.attach("socket", path=str(self.sock))
        except ConnectionRefusedError:
            return False
        return True

    def start(self) -> Neovim:
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [*self.nvim_cmd, "--headless", "--listen", str(self.sock)],
            cwd=self.workspace,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        # The socket file appears at bind(), a moment before listen(): under load a connect can
        # land in between and be refused, so attaching is what we wait for.
        wait_for(self._try_attach, 10, what="nvim socket accepting")
        return self

    @property
    def api(self) -> pynvim.Nvim:
        assert self._api is not None, "Neovim not started"
        return self._api

    def lua(self, code: str, *args: Any) -> Any:
        return self.api.exec_lua(code, *args)

    def quit(self, timeout: float = 5.0) -> int | None:
        if self.proc is None:
            return None
        with contextlib.suppress(Exception):
            # A notification: a request would never be answered if Neovim sits at a prompt.
            self.api.command("qa!", async_=True)
        with contextlib.suppress(Exception):
            self.api.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    # -- plugin state ----------------------------------------------------------------------

    @property
    def discovery_dir(self) -> Path:
        return self.tmpdir / "gemini" / "ide"

    def discovery_files(self) -> list[Path]:
        if not self.discovery_dir.exists():
            return []
        return sorted(self.discovery_dir.glob("gemini-ide-server-*.json"))

    def wait_discovery(self, timeout: float = 30.0, exclude_port: int | None = None) -> Discovery:
        def find() -> Discovery | None:
            for path in self.discovery_files():
                try:
                    data = json.loads(path.read_text())
                except ValueError:
                    continue
                if data.get("port") != exclude_port:
                    return Discovery(path, data["port"], data["authToken"], data["workspacePath"], data)
            return None

        return wait_for(find, timeout, what="discovery file")

    def server_state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.lua("return require('gemini_companion').status()")
        return state

    def wait_state(self, state: str, timeout: float = 20.0) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def reached() -> dict[str, Any] | None:
            seen.clear()
            seen.update(self.server_state())
            return dict(seen) if seen.get("state") == state else None

        try:
            return wait_for(reached, timeout, what=f"server state {state}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last seen: {seen.get('state')} ({seen.get('error')})") from None

    def health(self) -> str:
        """What `:checkhealth gemini_companion` shows (its buffer is wiped again)."""
        self.api.command("checkhealth gemini_companion")
        text = "\n".join(self.api.current.buffer[:])
        self.api.command("bwipeout!")
        return text

    def notifications(self) -> list[list[Any]]:
        notes: list[list[Any]] = self.lua("return _G.__notifications or {}")
        return notes

    def log_text(self) -> str:
        log = self.state / "nvim" / "gemini_companion.log"
        return log.read_text(encoding="utf-8") if log.exists() else ""


# Tests read what the plugin told the user through vim.notify.
_CAPTURE_NOTIFY = """
_G.__notifications = {}
local orig = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(_G.__notifications, { msg, level or 2 })
  return orig(msg, level, opts)
end
"""


@contextlib.asynccontextmanager
async def mcp_client(
    url: str, token: str | None, *, mode: str = "legacy", message_handler: Any = None
) -> AsyncIterator[Any]:
    """The official mcp Python SDK client, authenticated with the bearer token."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, message_handler=message_handler) as client:  # type: ignore[arg-type]
            yield client


def watch_reviews_opening(nvim: Neovim) -> None:
    """Note when each review opens, on Neovim's monotonic clock (the same as time.monotonic's)."""
    nvim.lua(
        "_G.__reviews_opened = {}; vim.api.nvim_create_autocmd('User', {pattern = 'GeminiReviewOpened',"
        " callback = function() table.insert(_G.__reviews_opened, vim.uv.hrtime() / 1e9) end})"
    )


def edit_to_review_ms(nvim: Neovim, answered: list[tuple[str, float]], tool: str) -> float:
    """From the model's answer that asked for `tool` to the first review opened after it, in ms."""
    asked = [at for name, at in answered if name == tool][-1]
    opened = [at for at in nvim.lua("return _G.__reviews_opened") if at >= asked]
    return round((opened[0] - asked) * 1000, 1)


def post_hook(port: int, token: str, agent: str, event: dict[str, Any]) -> bytes:
    """What an agent's hook client sends to Neovim's /hooks/<agent>; its answer (waits for a review)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/hooks/{agent}",
        json.dumps(event).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        body: bytes = response.read()
        return body
