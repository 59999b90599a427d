"""A minimal keep-alive MCP Streamable-HTTP client for benchmarks (stdlib only, JSON answers)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from typing import Any

PROTOCOL = "2025-06-18"


class McpHttp:
    def __init__(self, port: int, token: str, path: str = "/mcp") -> None:
        self.path, self.token = path, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.session: str | None = None
        self._id = 0

    def _post(self, payload: dict[str, Any]) -> tuple[http.client.HTTPResponse, bytes]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.token}",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = PROTOCOL
        self.conn.request("POST", self.path, body=json.dumps(payload).encode(), headers=headers)
        resp = self.conn.getresponse()
        return resp, resp.read()

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._id += 1
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            payload["params"] = params
        resp, data = self._post(payload)
        if resp.status != 200:
            raise RuntimeError(f"{method}: HTTP {resp.status} {data[:200]!r}")
        msg = json.loads(data)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        if method == "initialize":
            self.session = resp.getheader("Mcp-Session-Id")
        return msg["result"]

    def initialize(self) -> Any:
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        resp, _ = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if resp.status != 202:
            raise RuntimeError(f"initialized: HTTP {resp.status}")
        return result

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        result = self.request("tools/call", {"name": name, "arguments": args or {}})
        if result.get("isError"):
            raise RuntimeError(f"tool error: {result}")
        return result

    def close(self) -> None:
        self.conn.close()


class EventStream:
    """The session's GET event stream, read on a thread; messages land in `queue` with their arrival time."""

    def __init__(self, client: McpHttp, port: int) -> None:
        import queue
        import threading
        import time

        self.queue: queue.Queue[tuple[float, Any]] = queue.Queue()
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=None)
        self._conn.request(
            "GET",
            client.path,
            headers={
                "Accept": "text/event-stream",
                "Authorization": f"Bearer {client.token}",
                "Mcp-Session-Id": client.session or "",
                "MCP-Protocol-Version": PROTOCOL,
            },
        )
        self._resp = self._conn.getresponse()
        if self._resp.status != 200:
            raise RuntimeError(f"GET stream: HTTP {self._resp.status}")

        def read() -> None:
            try:
                for raw in self._resp:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data:"):
                        self.queue.put((time.perf_counter(), json.loads(line[5:])))
            except Exception:  # closed
                return

        threading.Thread(target=read, daemon=True).start()

    def close(self) -> None:
        # Shut the socket down first: it wakes the reader thread now. A close alone waits for that
        # thread's read to return, at the server's next keep-alive (15 s by default).
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._conn.close()


def propose(port: int, token: str, path: str, content: str) -> McpHttp:
    """A client (a session of its own) that proposed `content` for `path` with openDiff, as gemini does."""
    client = McpHttp(port, token)
    client.initialize()
    client.request("tools/call", {"name": "openDiff", "arguments": {"filePath": path, "newContent": content}})
    return client
