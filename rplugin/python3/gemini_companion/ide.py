"""Gemini CLI IDE mode: editor context for every client, and diff review tools.

Python owns the protocol half (validation, which client gets which notification);
Lua (`gemini_companion.context`, `gemini_companion.diff`) owns the editor half.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .config import CompanionConfig
from .context import build_context
from .diffs import DiffRegistry
from .gateway import NeovimCallError, NeovimUnavailable, NvimGateway
from .sessions import ClientRegistry, ClientSession
from .tools import NativeTool, error_result, text_result

log = logging.getLogger(__name__)

CONTEXT_METHOD = "ide/contextUpdate"
_DIFF = "require('gemini_companion.diff')"


class OpenDiffArgs(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    filePath: str
    newContent: str


class CloseDiffArgs(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    filePath: str
    suppressNotification: bool | None = None


def _validation_message(exc: ValidationError) -> str:
    parts = [f"`{'.'.join(str(p) for p in e['loc'])}`: {e['msg']}" for e in exc.errors()]
    return "invalid arguments: " + "; ".join(parts)


class IdeCompanion:
    def __init__(self, gateway: NvimGateway, clients: ClientRegistry, config: CompanionConfig) -> None:
        self._gateway = gateway
        self._clients = clients
        self._config = config
        self.diffs = DiffRegistry(clients)
        self.context: dict[str, Any] = build_context({}, is_trusted=config.context.is_trusted)
        self._tasks: set[asyncio.Task[Any]] = set()
        clients.on_stream_opened.append(self._send_snapshot)
        clients.on_removed.append(self._session_gone)

    # -- context ---------------------------------------------------------------------------

    def on_context(self, raw: Any) -> None:
        if not self._config.context.enabled:
            return
        self.context = build_context(
            raw, is_trusted=self._config.context.is_trusted, max_files=self._config.context.max_files
        )
        self._clients.broadcast(CONTEXT_METHOD, self.context)

    def _send_snapshot(self, client: ClientSession) -> None:
        # Notifications sent before a client's GET stream exists are lost: send one now.
        if self._config.context.enabled:
            client.send_latest(CONTEXT_METHOD, self.context)

    # -- diffs -----------------------------------------------------------------------------

    def on_diff_event(self, event: dict[str, Any]) -> None:
        """The user decided in Neovim: `:w` (accepted) or closed the view (rejected)."""
        path = event.get("path")
        if not isinstance(path, str):
            return
        accepted = event.get("action") == "accepted"
        content = event.get("content") if isinstance(event.get("content"), str) else None
        if not self.diffs.resolve(path, accepted, content):
            log.debug("diff event for %s with nothing pending", path)

    def _session_gone(self, client: ClientSession) -> None:
        for path in self.diffs.of_session(client.session_id):
            self.diffs.forget(path)
            self._spawn(self._close_view(path))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _close_view(self, path: str) -> dict[str, Any] | None:
        try:
            reply = await self._gateway.exec_lua(f"return {_DIFF}.close(...)", path, what="closing the diff")
        except (NeovimUnavailable, NeovimCallError) as exc:
            log.warning("could not close the diff view for %s: %s", path, exc)
            return None
        return reply if isinstance(reply, dict) else None

    async def open_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = OpenDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        path, content = req.filePath, req.newContent
        problem = _check_target(path, content)
        if problem:
            return error_result(problem)
        previous = self.diffs.opened(path, session_id)
        if previous is not None:
            self.diffs.notify(previous, accepted=False)  # replaced: the first proposal is rejected
        try:
            reply = await self._gateway.exec_lua(
                f"return {_DIFF}.open(...)", path, content, what="opening the diff"
            )
        except (NeovimUnavailable, NeovimCallError) as exc:
            self.diffs.forget(path)
            return error_result(f"could not open the diff in Neovim: {exc}")
        if not (isinstance(reply, dict) and reply.get("ok")):
            self.diffs.forget(path)
            reason = reply.get("error") if isinstance(reply, dict) else None
            return error_result(f"could not open the diff in Neovim: {reason or 'unknown error'}")
        return {"content": []}

    async def close_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = CloseDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        self.diffs.forget(req.filePath)  # closed by the CLI: no accept/reject notification
        reply = await self._close_view(req.filePath)
        body: dict[str, Any] = {}
        if reply and isinstance(reply.get("content"), str):
            body["content"] = reply["content"]
        return text_result(json.dumps(body, ensure_ascii=False))

    def tools(self) -> list[NativeTool]:
        return [
            NativeTool(
                name="openDiff",
                description="Show a proposed new content for a file as a diff in Neovim. Returns at once; "
                "the user's decision arrives later as ide/diffAccepted (with the final text) or "
                "ide/diffRejected.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "filePath": {"type": "string", "description": "Absolute path of the file"},
                        "newContent": {"type": "string", "description": "The full proposed text"},
                    },
                    "required": ["filePath", "newContent"],
                },
                handler=self.open_diff,
            ),
            NativeTool(
                name="closeDiff",
                description="Close the diff view for a file without notifying; returns JSON "
                '{"content": <current proposed text>}.',
                input_schema={
                    "type": "object",
                    "properties": {
                        "filePath": {"type": "string"},
                        "suppressNotification": {"type": "boolean"},
                    },
                    "required": ["filePath"],
                },
                handler=self.close_diff,
            ),
        ]


def _check_target(path: str, content: str) -> str | None:
    if not os.path.isabs(path):
        return f"filePath must be an absolute path, got {path!r}"
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        return f"the directory {parent} does not exist"
    if os.path.exists(path) and not os.path.isfile(path):
        return f"{path} exists but is not a regular file"
    if "\0" in content:
        return "newContent contains NUL bytes (binary data); Neovim can only review text"
    return None
