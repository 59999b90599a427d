"""Shared pieces of the fuzz tests (tests/integration/test_fuzz_*.py).

* `budget()`: how many hypothesis examples a test runs. `FUZZ_EXAMPLES` sets the size (default
  400: `make test` stays under a minute); each fuzz test takes a fixed share of it. The shares
  add up to 1.12, as hypothesis stops early for tools whose schema admits few distinct
  arguments. `make stress` sets FUZZ_EXAMPLES=17000: over 10 000 HTTP/JSON-RPC inputs (generated
  requests 0.40 + damaged ones 0.20) and about 8 000 tool calls.
* `fuzz_settings()`: derandomized (a fixed seed per test), no example database written, no deadline.
* `module_nvim()`: one headless Neovim per test module (starting one costs about a second).
* `LoopThread`: an asyncio loop on its own thread, so synchronous hypothesis tests can keep one
  SDK client (and its MCP session) open across all their examples.
* `exchange()`: a raw HTTP/1.1 exchange over a socket, with a deadline: it sends any bytes at
  all and parses whatever comes back, so framing errors, half bodies and floods can be sent.
* `editor_state()`: Neovim's user-visible state (buffers, windows, cursor, registers, undo, mode),
  compared around every call to a read-only tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import Discovery, Neovim, mcp_client, record_figure, wait_for

T = TypeVar("T")

# Hypothesis keeps caches in ./.hypothesis; keep them out of the repository.
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "gemini-companion-hypothesis"))

CORPUS = Path(__file__).resolve().parents[1] / "fuzz_corpus"

# -- sizes ---------------------------------------------------------------------------------

DEFAULT_TOTAL = 400


def total_examples() -> int:
    raw = os.environ.get("FUZZ_EXAMPLES", "").strip()
    return int(raw) if raw else DEFAULT_TOTAL


def budget(share: float) -> int:
    """This test's number of examples: its share of FUZZ_EXAMPLES (rounded up, at least 5)."""
    return max(5, -(-int(total_examples() * share * 1000) // 1000))


def stress() -> bool:
    return total_examples() > DEFAULT_TOTAL


def fuzz_settings(share: float) -> settings:
    return settings_for(budget(share))


def settings_for(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,  # a fixed seed per test: the same examples on every run
        database=None,  # nothing written under the repository
        deadline=None,  # each example talks to a real Neovim
        print_blob=False,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
        ],
    )


def json_strategies(
    *, int_bound: int, text_size: int, width: int, key_size: int, max_leaves: int
) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    """(scalars, values): JSON scalars, and JSON values nested from them, within these bounds."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-int_bound, int_bound),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=text_size),
    )
    values = st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=width) | st.dictionaries(st.text(max_size=key_size), kids, max_size=width)
        ),
        max_leaves=max_leaves,
    )
    return scalars, values


def fuzz_timeout(share: float, per_example_s: float = 0.5) -> pytest.MarkDecorator:
    """pytest-timeout for a fuzz test, scaled with its number of examples."""
    return pytest.mark.timeout(120 + budget(share) * per_example_s)


class Tally:
    """Inputs tried and failures per category, for `make stress`'s report (bench/reliability.md
    reads the `fuzz.<category>` figures)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, int]] = {}

    @contextlib.contextmanager
    def counting(self, category: str, *, known_bug: bool = False) -> Iterator[None]:
        entry = self.entries.setdefault(category, {"inputs": 0, "failures": 0, "known_bugs": 0})
        entry["inputs"] += 1
        try:
            yield
        except BaseException:
            entry["known_bugs" if known_bug else "failures"] += 1
            raise

    def record(self) -> None:
        for category, entry in sorted(self.entries.items()):
            record_figure(f"fuzz.{category}", **entry, examples_setting=total_examples())


# -- Neovim per module ---------------------------------------------------------------------


@contextlib.contextmanager
def module_nvim(base: Path, init_lua: str = "") -> Iterator[tuple[Neovim, Discovery]]:
    nvim = Neovim(base, init_lua=init_lua).start()
    try:
        disc = nvim.wait_discovery()
        nvim.wait_state("running")
        yield nvim, disc
    finally:
        nvim.quit(timeout=3)


# -- an asyncio loop for synchronous tests -------------------------------------------------


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fuzz-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T], timeout: float = 30.0) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise AssertionError(f"no answer within {timeout} s (a hang)") from None

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class SdkClient:
    """One official-SDK client session kept open on a LoopThread (entered and left in one task)."""

    def __init__(self, loop: LoopThread, url: str, token: str) -> None:
        self._loop = loop
        self._ready: Future[Any] = Future()
        self._stop: asyncio.Event | None = None

        async def hold() -> None:
            self._stop = asyncio.Event()
            try:
                async with mcp_client(url, token) as client:
                    self._ready.set_result(client)
                    await self._stop.wait()
            except BaseException as exc:
                if not self._ready.done():
                    self._ready.set_exception(exc)
                raise

        self._task = asyncio.run_coroutine_threadsafe(hold(), loop.loop)
        self.client = self._ready.result(30)

    def run(self, make: Callable[[Any], Awaitable[T]], timeout: float = 30.0) -> T:
        return self._loop.run(make(self.client), timeout)

    def close(self) -> None:
        if self._stop is not None:
            self._loop.loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception):
            self._task.result(10)


def assert_healthy(nvim: Neovim, disc: Discovery, loop: LoopThread | None = None) -> None:
    """The next valid call works: a fresh SDK client lists the tools and calls nvim_info; Neovim
    answers, the server still runs and the Python host is alive."""

    pid = nvim.api.call("getpid")  # pynvim from this thread only

    async def check() -> None:
        async with mcp_client(disc.url, disc.token) as client:
            tools = await client.list_tools()
            assert "nvim_info" in {t.name for t in tools.tools}
            result = await client.call_tool("nvim_info", {}, read_timeout_seconds=15)
            assert not result.is_error, result.content[0].text
            assert json.loads(result.content[0].text)["pid"] == pid

    if loop is None:
        asyncio.run(asyncio.wait_for(check(), 30))
    else:
        loop.run(check(), 30)
    assert nvim.api.eval("1+1") == 2
    assert nvim.server_state()["state"] == "running"
    assert nvim.lua("return require('gemini_companion.to_host').host_alive()") is True


def assert_serving(server: InProcessServer, loop: LoopThread | None = None) -> None:
    """assert_healthy for the in-process tier: a fresh SDK client lists the tools and calls
    nvim_info, answered by the fake Neovim; the server still runs, its thread alive."""

    async def check() -> None:
        async with mcp_client(server.url, server.token) as client:
            tools = await client.list_tools()
            assert "nvim_info" in {t.name for t in tools.tools}
            result = await client.call_tool("nvim_info", {}, read_timeout_seconds=15)
            assert not result.is_error, result.content[0].text
            assert json.loads(result.content[0].text)["pid"] == server.fake.pid

    if loop is None:
        asyncio.run(asyncio.wait_for(check(), 30))
    else:
        loop.run(check(), 30)
    assert server.status()["state"] == "running"
    assert server.lifecycle.state == "running"


# -- raw HTTP ------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int | None  # None: the connection closed without any HTTP response
    reason: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    elapsed: float = 0.0
    stream: bool = False  # an event stream was opened (and closed by us)
    timed_out: bool = False
    raw_head: bytes = b""

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        body = self.body[:300]
        return (
            f"Answer(status={self.status}, timed_out={self.timed_out}, stream={self.stream}, body={body!r})"
        )


def build(
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes = b"",
    *,
    length: bool = True,
    close: bool = True,
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1"]
    lines += [f"{k}: {v}" for k, v in headers]
    if length and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    if close and not any(k.lower() == "connection" for k, _ in headers):
        lines.append("Connection: close")
    head = "\r\n".join(lines) + "\r\n\r\n"
    return head.encode("utf-8", "surrogateescape") + body


class _Reader:
    def __init__(self, sock: socket.socket, deadline: float, eof_after: float | None = None) -> None:
        self.sock = sock
        self.deadline = deadline
        self.eof_after = eof_after
        self.eof_at: float | None = None  # half-close our side then, if nothing came back yet
        self.rearm()
        self.buf = b""
        self.eof = False

    def fill(self) -> bool:
        while True:
            now = time.monotonic()
            limit = self.deadline if self.eof_at is None else min(self.deadline, self.eof_at)
            if limit - now <= 0:
                if self.eof_at is not None and now < self.deadline:
                    self.eof_at = None  # the server may be waiting for more: tell it there is none
                    with contextlib.suppress(OSError):
                        self.sock.shutdown(socket.SHUT_WR)
                    continue
                raise TimeoutError
            self.sock.settimeout(limit - now)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            break
        if not chunk:
            self.eof = True
            return False
        self.eof_at = None
        self.buf += chunk
        return True

    def rearm(self) -> None:
        if self.eof_after is not None:
            self.eof_at = time.monotonic() + self.eof_after

    def until(self, marker: bytes) -> bytes | None:
        while marker not in self.buf:
            if not self.fill():
                return None
        head, _, self.buf = self.buf.partition(marker)
        return head

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n and self.fill():
            pass
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self) -> bytes:
        while self.fill():
            pass
        out, self.buf = self.buf, b""
        return out


def exchange(
    port: int,
    data: bytes,
    *,
    timeout: float = 10.0,
    eof_after: float | None = None,
    head: bool = False,
) -> Answer:
    """Send `data` on a new connection and read one response (skipping 1xx), within `timeout`.

    With `eof_after`, a request that got no answer that long is half-closed (the server may be
    waiting for bytes that will never come): from then on it must answer or close. (Half-closing
    at once is no good: aiohttp then drops the answer to a complete request.)"""
    t0 = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        with contextlib.suppress(OSError):  # the server may answer (413, 400) and close early
            sock.sendall(data)
        reader = _Reader(sock, t0 + timeout, eof_after)
        try:
            return _read_answer(reader, t0, head)
        except TimeoutError:
            return Answer(status=None, timed_out=True, elapsed=time.monotonic() - t0, body=reader.buf)
    finally:
        sock.close()


_STATUS = re.compile(rb"^HTTP/(\d)\.(\d) (\d{3})(?: (.*))?$")


def _read_answer(reader: _Reader, t0: float, head_only: bool = False) -> Answer:
    while True:
        head = reader.until(b"\r\n\r\n")
        if head is None:
            return Answer(status=None, elapsed=time.monotonic() - t0, body=reader.buf)
        first, *lines = head.split(b"\r\n")
        m = _STATUS.match(first)
        if not m:
            raise AssertionError(f"malformed status line {first!r}")
        status = int(m.group(3))
        if 100 <= status < 200:
            reader.rearm()  # "100 Continue": the server now waits for the body
            continue
        headers = []
        for line in lines:
            k, sep, v = line.partition(b":")
            assert sep, f"malformed header line {line!r}"
            headers.append((k.decode("latin-1").strip(), v.decode("latin-1").strip()))
        answer = Answer(
            status=status, reason=(m.group(4) or b"").decode("latin-1"), headers=headers, raw_head=head
        )
        ctype = (answer.header("content-type") or "").lower()
        if head_only:
            pass
        elif ctype.startswith("text/event-stream"):
            answer.stream = True
        elif (answer.header("transfer-encoding") or "").lower() == "chunked":
            body = b""
            while True:
                size_line = reader.until(b"\r\n")
                if size_line is None:
                    break
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    reader.until(b"\r\n")
                    break
                body += reader.exactly(size)
                reader.exactly(2)
            answer.body = body
        elif answer.header("content-length") is not None:
            answer.body = reader.exactly(int(answer.header("content-length") or 0))
        elif status in (204, 304):
            pass
        else:
            answer.body = reader.rest()
        answer.elapsed = time.monotonic() - t0
        return answer


# -- well-formed answers -------------------------------------------------------------------

JSONRPC_CODES = {
    -32700,  # parse error
    -32600,  # invalid request
    -32601,  # method not found
    -32602,  # invalid params
    -32603,  # internal error
    -32022,  # unsupported protocol version (the server's own gate)
}
_TRACEBACK = re.compile(rb"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|stack traceback:")


def assert_well_formed(answer: Answer, what: object = "") -> Any:
    """A real HTTP status, no traceback, and a JSON error body that says what was wrong.
    Returns the parsed JSON body (or None)."""
    assert not answer.timed_out, f"no answer in time (a hang) for {what!r}"
    assert answer.status is not None, f"connection closed without an answer for {what!r}"
    assert 200 <= answer.status < 600, answer
    assert answer.status != 500, f"500 for {what!r}: {answer!r}"
    assert not _TRACEBACK.search(answer.body), f"traceback in the body for {what!r}: {answer!r}"
    if answer.stream or not answer.body:
        return None
    ctype = (answer.header("content-type") or "").lower()
    if not ctype.startswith("application/json"):
        # Only the HTTP layer answers in plain text (aiohttp's parser, Starlette's Content-Type check).
        assert answer.status >= 400 and len(answer.body) < 2048, answer
        return None
    value = json.loads(answer.body)
    if answer.status >= 400:
        assert isinstance(value, dict), answer
        if "jsonrpc" in value:
            error = value["error"]
            assert error["code"] in JSONRPC_CODES, answer
            assert isinstance(error["message"], str) and error["message"], answer
        else:  # the HTTP edge (403/401/413/404): {"error": reason}
            assert isinstance(value.get("error"), str) and 0 < len(value["error"]) < 200, answer
    return value


def jsonrpc_error(answer: Answer) -> dict[str, Any]:
    value = answer.json()
    assert isinstance(value, dict) and value.get("jsonrpc") == "2.0" and "error" in value, answer
    error: dict[str, Any] = value["error"]
    return error


# -- editor state --------------------------------------------------------------------------

_STATE_LUA = r"""
local function digest(lines)
  -- vim.fn.sha256 refuses text with NUL bytes (a Blob): spell them out first
  return vim.fn.sha256((table.concat(lines, '\n'):gsub('%z', '\\0')))
end
local out = { buffers = {}, windows = {}, registers = {} }
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  local loaded = vim.api.nvim_buf_is_loaded(b)
  local entry = {
    bufnr = b, name = vim.api.nvim_buf_get_name(b), listed = vim.bo[b].buflisted, loaded = loaded,
    buftype = vim.bo[b].buftype, filetype = vim.bo[b].filetype, modified = vim.bo[b].modified,
    changedtick = vim.api.nvim_buf_get_changedtick(b),
  }
  if loaded then
    local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
    entry.lines = #lines
    entry.text = digest(lines)
    local u = vim.fn.undotree(b)
    entry.undo = { u.seq_cur, u.seq_last, u.save_cur, u.save_last }
  end
  table.insert(out.buffers, entry)
end
for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    table.insert(out.windows, {
      win = w, tab = tab, buf = vim.api.nvim_win_get_buf(w), cursor = vim.api.nvim_win_get_cursor(w),
      floating = vim.api.nvim_win_get_config(w).relative ~= '',
    })
  end
end
for _, r in ipairs(vim.split('"0123456789abcdefghijklmnopqrstuvwxyz-./:', '')) do
  local info = vim.fn.getreginfo(r)
  out.registers[r] = { info.regtype or '', digest(info.regcontents or {}) }
end
out.current = { win = vim.api.nvim_get_current_win(), buf = vim.api.nvim_get_current_buf(),
  tab = vim.api.nvim_get_current_tabpage(), alternate = vim.fn.bufnr('#') }
out.mode = vim.api.nvim_get_mode()
out.cwd = vim.fn.getcwd()
out.visual = { vim.fn.getpos("'<"), vim.fn.getpos("'>"), vim.fn.visualmode() }
return out
"""


def editor_state(nvim: Neovim) -> dict[str, Any]:
    state: dict[str, Any] = nvim.lua(_STATE_LUA)
    return state


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed between two editor_state() snapshots (empty: nothing)."""
    diff: dict[str, Any] = {}
    old = {b["bufnr"]: b for b in before["buffers"]}
    new = {b["bufnr"]: b for b in after["buffers"]}
    for nr in old.keys() | new.keys():
        if old.get(nr) != new.get(nr):
            diff[f"buffer {nr}"] = (old.get(nr), new.get(nr))
    for name, value in before["registers"].items():
        if after["registers"].get(name) != value:
            diff[f"register {name}"] = (value, after["registers"].get(name))
    for key in ("windows", "current", "mode", "cwd", "visual"):
        if before[key] != after[key]:
            diff[key] = (before[key], after[key])
    return diff


# -- the workspace on disk -----------------------------------------------------------------


def tree_digest(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under root: (size, mtime_ns, sha256) by relative path (FIFOs: type only)."""
    out: dict[str, tuple[int, int, str]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(root))
        if path.is_fifo() or path.is_dir():
            out[rel] = (0, st.st_mtime_ns, "dir" if path.is_dir() else "fifo")
        elif path.is_file():
            out[rel] = (st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "") -> T:
    return wait_for(predicate, timeout, what=what)


class RawSession:
    """An MCP session spoken with raw HTTP (for what the SDK client refuses to send)."""

    def __init__(self, disc: Discovery, protocol: str = "2025-06-18") -> None:
        self.disc = disc
        self.protocol = protocol
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        answer = self.post(json.dumps(init).encode(), session=None)
        assert answer.status == 200, answer
        sid = answer.header("mcp-session-id")
        assert sid
        self.sid = sid
        assert self.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}').status == 202
        self._ids = 0

    def headers(self, session: str | None) -> list[tuple[str, str]]:
        out = [
            ("Host", f"127.0.0.1:{self.disc.port}"),
            ("Authorization", f"Bearer {self.disc.token}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ]
        if session:
            out += [("Mcp-Session-Id", session), ("MCP-Protocol-Version", self.protocol)]
        return out

    def post(self, body: bytes, session: str | bool | None = True, timeout: float = 30.0) -> Answer:
        sid = self.sid if session is True else session or None
        return exchange(self.disc.port, build("POST", "/mcp", self.headers(sid), body), timeout=timeout)

    def request(self, method: str, params: Any, timeout: float = 30.0) -> Answer:
        self._ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        return self.post(body.encode(), timeout=timeout)

    def close(self) -> None:
        exchange(self.disc.port, build("DELETE", "/mcp", self.headers(self.sid)), timeout=10)
