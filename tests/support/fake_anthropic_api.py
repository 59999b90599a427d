"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real `claude` offline.

claude (ANTHROPIC_BASE_URL, an API key) posts every model call to `/v1/messages?beta=true`:
  without `tools`   side questions (a session title, ...): a fixed short text
  with `tools`      the main turn: the next scripted reply (text, or one tool use), streamed as SSE events
Anything else is answered 404 and recorded in `unexpected`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.local_http import LocalHttpServer

MODEL = "claude-sonnet-4-5"


def _events(blocks: list[dict[str, Any]], stop_reason: str, message_id: str) -> Iterator[tuple[str, Any]]:
    """The Messages API's stream of one assistant message made of `blocks`."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": []}
    yield (
        "message_start",
        {"type": "message_start", "message": {**message, "stop_reason": None, "usage": usage}},
    )
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    ending = {"stop_reason": stop_reason, "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": ending, "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


class FakeAnthropicApi(LocalHttpServer):
    """Answers main turns from a script the test fills in (`say`, `use`) and records what claude sent."""

    def __init__(self) -> None:
        self._script: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # Bodies of the main-turn requests, in order: what the model would have been told.
        self.turns: list[dict[str, Any]] = []
        # (tool name or "text", time.monotonic()) of each main turn answered: where a figure starts.
        self.answered: list[tuple[str, float]] = []
        self.unexpected: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0] == "/v1/messages":
                    api._answer(self, json.loads(body))
                else:
                    api._refuse(self, "POST")

            def do_GET(self) -> None:
                api._refuse(self, "GET")

            def do_HEAD(self) -> None:
                api._refuse(self, "HEAD")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._listen(Handler)

    # -- the script --------------------------------------------------------------------------

    def say(self, text: str) -> None:
        """The next main turn answers with this text (and ends the turn)."""
        with self._lock:
            self._script.append({"type": "text", "text": text})

    def use(self, tool: str, **tool_input: Any) -> None:
        """The next main turn asks claude to run this tool."""
        with self._lock:
            block = {
                "type": "tool_use",
                "id": f"toolu_{next(self._ids):04d}",
                "name": tool,
                "input": tool_input,
            }
            self._script.append(block)

    # -- answering ---------------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        with self._lock:
            if request.get("tools"):
                self.turns.append(request)
                block = (
                    self._script.popleft() if self._script else {"type": "text", "text": "(nothing scripted)"}
                )
            else:
                block = {"type": "text", "text": "Scripted session"}
        if request.get("tools"):
            self.answered.append((str(block.get("name", "text")), time.monotonic()))
        stop_reason = "tool_use" if block["type"] == "tool_use" else "end_turn"
        message_id = f"msg_{next(self._ids):04d}"
        if not request.get("stream"):
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [block],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
            _send(handler, 200, "application/json", json.dumps(message).encode())
            return
        data = b"".join(
            f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()
            for event, payload in _events([block], stop_reason, message_id)
        )
        _send(handler, 200, "text/event-stream", data)

    def _refuse(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        with self._lock:
            self.unexpected.append(f"{method} {handler.path}")
        body = b'{"type": "error", "error": {"type": "not_found_error", "message": "not scripted"}}'
        _send(handler, 404, "application/json", body if method != "HEAD" else b"")


def _send(handler: BaseHTTPRequestHandler, status: int, content_type: str, data: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def request_texts(request: dict[str, Any]) -> list[str]:
    """Every text a main-turn request carries in its messages (prompts, IDE context, tool results)."""
    texts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "text":
                texts.append(block["text"])
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                texts.extend([inner] if isinstance(inner, str) else [b.get("text", "") for b in inner or []])
    return texts
