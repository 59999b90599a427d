"""A scripted HTTP service on 127.0.0.1 for the real clients' tests (the fake model APIs)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

_Self = TypeVar("_Self", bound="LocalHttpServer")


class LocalHttpServer:
    """Serves its handler on a free port from `__enter__` until `__exit__`."""

    def _listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self: _Self) -> _Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
