"""Import mcp and aiohttp without the HTTP clients their package `__init__`s pull in.

The host never uses those clients, but importing them costs start time and memory (figures below).
Must run before any `mcp` or `aiohttp` import; an SDK workaround with a canary (docs/HTTP-EDGE.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from pathlib import Path
from typing import Any

# Packages whose `__init__` imports far more than the host uses (measured on a 2-core machine):
# mcp 2.3's imports the SDK's whole client (httpx2, MCPServer, starlette's auth routes) for any
# `mcp.server.*` module, and `mcp.server`'s imports MCPServer: ~100 ms and 12 MiB; aiohttp 3.14's
# imports its HTTP client (connector, cookie jar...) for `aiohttp.web`: ~65 ms and 4 MiB.
_LEAN_PACKAGES = ("mcp", "mcp.server", "aiohttp")  # a parent before its child: find_spec reads its __path__
_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)


def import_lean() -> None:
    """Register those packages as shells (their real `__path__`, so submodules import as usual)
    whose own `__init__` runs on the first attribute they miss (PEP 562): `aiohttp.ClientSession()`
    (OpenCode registration) or `from mcp import ClientSession` still gets it, just later.
    aiohttp's own modules read only `__version__` from the package, set up front.
    Canaries: tests/unit/test_sdk_compat.py (`test_packages_still_import_more_than_the_host_uses`)."""
    for name in _LEAN_PACKAGES:
        if name in sys.modules:
            continue  # imported already (another plugin, a restart): nothing left to save
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            continue
        shell = importlib.util.module_from_spec(spec)
        if name == "aiohttp":
            version = _VERSION_LINE.search(Path(str(spec.origin)).read_text(encoding="utf-8"))
            if version is None:
                continue  # laid out differently: import it whole
            vars(shell)["__version__"] = version.group(1)
        shell.__getattr__ = _complete_package(shell)  # type: ignore[method-assign]
        sys.modules[name] = shell
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, shell)


def _complete_package(shell: Any) -> Any:
    lock = threading.Lock()  # two threads missing an attribute at once: one runs __init__

    def complete(attribute: str) -> Any:
        submodule = f"{shell.__name__}.{attribute}"
        if not attribute.startswith("__") and importlib.util.find_spec(submodule) is not None:
            return importlib.import_module(submodule)  # `from aiohttp import web`: the package stays lean
        with lock:
            if vars(shell).get("__getattr__") is complete:
                del shell.__getattr__
                shell.__spec__.loader.exec_module(shell)
        return getattr(shell, attribute)

    return complete


def import_serving_stack() -> None:
    """Before the SDK and aiohttp are imported (the first client, `ServerInstance.wake`):
    - `ssl` importable again. host.lua starts the host without it (asyncio, pynvim's loop, would
      load OpenSSL, ~4 MiB of an idle host that must stay under 40 MiB), and anyio needs it to
      import (its sockets module), though no TLS is ever used: asyncio keeps its "no ssl".
    - sse-starlette 3.7 (under the SDK's event streams) hooks uvicorn's exit if it can import it:
      ~45 ms and ~3 MiB (uvicorn, click) for a server we never run, so it cannot, just then.
    Canary: tests/unit/test_sdk_compat.py (`test_sse_starlette_still_imports_uvicorn`)."""
    for name in ("ssl", "_hashlib"):
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]
    if "sse_starlette" in sys.modules or "uvicorn" in sys.modules:
        return
    sys.modules["uvicorn"] = None  # type: ignore[assignment]  # (an import of it raises ImportError)
    try:
        importlib.import_module("sse_starlette.sse")
    finally:
        del sys.modules["uvicorn"]
