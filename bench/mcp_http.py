"""A minimal keep-alive MCP Streamable-HTTP client for benchmarks (stdlib only, JSON answers)."""

from __future__ import annotations

import http.client
import json
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
