"""A scripted stand-in for the Gemini model API on 127.0.0.1, for driving the real `gemini` program offline.

gemini-cli (API-key auth, GOOGLE_GEMINI_BASE_URL) makes two kinds of calls per turn; model names change
between versions, so requests are routed on the path suffix:
  `:generateContent`                 the model router (and other JSON side questions): a fixed JSON answer
  `:streamGenerateContent?alt=sse`   the main turn: the next scripted reply, as SSE `data:` lines
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_http import LocalHttpServer

ROUTER_ANSWER = {
    "reasoning": "scripted stand-in",
    "model_choice": "flash",
    "next_speaker": "user",
}


def _response(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A GenerateContentResponse carrying one model turn."""
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


class FakeGeminiApi(LocalHttpServer):
    """Answers main turns from a script the test fills in (`say`, `call`) and records what gemini sent."""

    def __init__(self) -> None:
        self._script: deque[list[dict[str, Any]]] = deque()
        self._lock = threading.Lock()
        # Bodies of the main-turn requests, in order: what the model would have been told.
        self.turns: list[dict[str, Any]] = []
        # (function called or "text", time.monotonic()) of each turn answered: where a figure starts.
        self.answered: list[tuple[str, float]] = []
        self.unexpected: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path
                if path.endswith(":streamGenerateContent?alt=sse"):
                    api._stream(self, json.loads(body))
                elif path.endswith(":generateContent"):
                    self._send(
                        "application/json", json.dumps(_response([{"text": json.dumps(ROUTER_ANSWER)}]))
                    )
                else:
                    with api._lock:
                        api.unexpected.append(f"POST {path}")
                    self._send("application/json", '{"error": {"code": 404, "message": "not scripted"}}', 404)

            def do_GET(self) -> None:
                with api._lock:
                    api.unexpected.append(f"GET {self.path}")
                self._send("application/json", '{"error": {"code": 404, "message": "not scripted"}}', 404)

            def _send(self, content_type: str, text: str, status: int = 200) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._listen(Handler)

    # -- the script --------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """The next main turn answers with this text."""
        with self._lock:
            self._script.append([{"text": text}])

    def call(self, tool: str, **args: Any) -> None:
        """The next main turn asks gemini to run this tool."""
        with self._lock:
            self._script.append([{"functionCall": {"name": tool, "args": args}}])

    def _stream(self, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        with self._lock:
            self.turns.append(request)
            parts = self._script.popleft() if self._script else [{"text": "(nothing scripted)"}]
            call = next((p["functionCall"]["name"] for p in parts if "functionCall" in p), "text")
            self.answered.append((call, time.monotonic()))
        data = f"data: {json.dumps(_response(parts))}\n\n".encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def user_texts(request: dict[str, Any]) -> list[str]:
    """The text parts of the user's side of a main-turn request (prompts, editor context)."""
    return [
        part["text"]
        for content in request.get("contents", [])
        if content.get("role") == "user"
        for part in content.get("parts", [])
        if "text" in part
    ]


def function_responses(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results a main-turn request reports to the model."""
    return [
        part["functionResponse"]
        for content in request.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
