"""Hop timestamps inside the Python host, for `make bench` only (never shipped, never on by default).

`bench/run.py` starts one Neovim whose environment has this directory on PYTHONPATH and
GEMINI_COMPANION_HOPS_OUT set; Python then imports this file in every process of that Neovim, the
host included. As the host imports aiohttp, the mcp SDK and our modules, class methods at the
hop boundaries are wrapped to append (hop, time.perf_counter_ns()) to a ring buffer, which a
daemon thread writes to GEMINI_COMPANION_HOPS_OUT. perf_counter_ns is CLOCK_MONOTONIC on Linux,
as are the bench client's perf_counter_ns and Lua's vim.uv.hrtime(), so one call's timestamps
from the three processes lie on one time line. The product code is not modified: a boundary
that moved (renamed class or method) is skipped and its hop reads "n/a" in the report.
"""

from __future__ import annotations

import collections
import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

OUT = os.environ.get("GEMINI_COMPANION_HOPS_OUT", "")
EVENTS: collections.deque[tuple[str, int]] = collections.deque(maxlen=200_000)
_now = time.perf_counter_ns
_mark = EVENTS.append


def _wrap_sync(cls: type, name: str, before: str, after: str | None = None) -> None:
    original = getattr(cls, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _mark((before, _now()))
        result = original(*args, **kwargs)
        if after:
            _mark((after, _now()))
        return result

    setattr(cls, name, wrapper)


def _wrap_async(cls: type, name: str, before: str, after: str) -> None:
    original = getattr(cls, name, None)
    if original is None:
        return

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        _mark((before, _now()))
        try:
            return await original(*args, **kwargs)
        finally:
            _mark((after, _now()))

    setattr(cls, name, wrapper)


def _patch_manager(cls: type) -> None:
    """The SDK's entry: also time when it hands the answer's body to our ASGI bridge."""
    original = getattr(cls, "handle_request", None)
    if original is None:
        return

    @functools.wraps(original)
    async def handle_request(self: Any, scope: Any, receive: Any, send: Any) -> None:
        _mark(("sdk_in", _now()))

        async def timed_send(message: Any) -> None:
            if message.get("type") == "http.response.body":
                _mark(("sdk_body", _now()))
            await send(message)

        try:
            await original(self, scope, receive, timed_send)
        finally:
            _mark(("sdk_out", _now()))

    cls.handle_request = handle_request


def _patch_channel(cls: type) -> None:
    _wrap_sync(cls, "request", "rpc_send")
    _wrap_sync(cls, "data_received", "rpc_recv")


PATCHES: dict[str, Callable[[ModuleType], Any]] = {
    # aiohttp: bytes arrive (HTTP parsing follows), then the application sees a parsed request.
    "aiohttp.web_protocol": lambda m: _wrap_sync(m.RequestHandler, "data_received", "http_bytes"),
    "aiohttp.web_app": lambda m: _wrap_async(m.Application, "_handle", "app_in", "app_out"),
    "mcp.server.streamable_http_manager": lambda m: _patch_manager(m.StreamableHTTPSessionManager),
    "mcp.server.streamable_http": lambda m: (
        _wrap_async(m.StreamableHTTPServerTransport, "_handle_post_request", "sdk_post", "sdk_post_out"),
        _wrap_sync(m.StreamableHTTPServerTransport, "_create_json_response", "sdk_json"),
    ),
    "mcp.server.runner": lambda m: _wrap_async(m.ServerRunner, "_on_request", "sdk_run", "sdk_run_out"),
    "gemini_companion.core.tools": lambda m: _wrap_async(m.ToolCatalog, "call", "tool_in", "tool_out"),
    "gemini_companion.nvim.gateway": lambda m: _wrap_async(m.NvimGateway, "request", "gw_in", "gw_out"),
    "gemini_companion.nvim.channel": lambda m: _patch_channel(m.NvimChannel),
    # Startup: when the server thread begins (its imports follow).
    "gemini_companion.lifecycle": lambda m: _wrap_sync(m.ServerLifecycle, "_thread_main", "server_thread"),
}


# Startup: when each of these finished importing (with what it imports), as "import:<name>".
IMPORTS = frozenset(
    {
        "pynvim",
        "gemini_companion.plugin",
        "pydantic",
        "gemini_companion.seam",
        "aiohttp.web",
        "mcp_types",
        "mcp.server.streamable_http_manager",
        "gemini_companion.instance",
    }
)


def _no_patch(module: ModuleType) -> None:
    return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, patch: Callable[[ModuleType], Any]) -> None:
        self.inner, self.patch = inner, patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        if module.__name__ in IMPORTS:
            _mark((f"import:{module.__name__}", _now()))
        try:
            self.patch(module)
        except Exception as exc:  # a moved boundary: that hop reads n/a
            print(f"hops: cannot patch {module.__name__}: {exc!r}", file=sys.stderr)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        patch = PATCHES.get(name) or (_no_patch if name in IMPORTS else None)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, patch)
        return spec


def _writer() -> None:
    # Writes only once the calls paused for a moment: dumping while they run would take the GIL
    # from the very hops being timed.
    seen = written = 0
    while True:
        time.sleep(0.2)
        count = len(EVENTS)
        if count != seen or count == written:
            seen = count
            continue
        events = list(EVENTS)
        written = len(events)
        tmp = f"{OUT}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(events, fh)
        os.replace(tmp, OUT)


def _is_host() -> bool:
    # Only the Neovim Python host: `python -c 'import neovim; neovim.start_host()' <rplugin paths>`
    # (for -c, sys.argv holds "-c" and the arguments, not the code).
    return sys.argv[:1] == ["-c"] and any("gemini_companion" in arg for arg in sys.argv[1:])


if OUT and _is_host():
    _mark(("host_start", _now()))  # site runs this just after the interpreter itself started
    sys.meta_path.insert(0, _Finder())
    threading.Thread(target=_writer, name="hops-writer", daemon=True).start()
