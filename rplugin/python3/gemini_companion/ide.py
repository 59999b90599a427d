"""Gemini CLI IDE mode: editor context for every client, and diff review tools.

Python owns the protocol half (validation, which client gets which notification);
Lua (`gemini_companion.context`, `gemini_companion.review`) owns the editor half.
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
from .diffs import DiffRegistry, ReviewRefused
from .gateway import NeovimCallError, NeovimUnavailable, NvimGateway
from .seam import CLOSE_DIFF, OPEN_DIFF, RELEASE_DIFF, DiffDecided
from .sessions import ClientRegistry, ConnectedClient
from .tools import NativeTool, error_result, text_result

log = logging.getLogger(__name__)

CONTEXT_METHOD = "ide/contextUpdate"


class OpenDiffArgs(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    filePath: str
    newContent: str


class CloseDiffArgs(BaseModel):
    # Gemini CLI also sends suppressNotification (checked a boolean by the tool's input schema):
    # closeDiff never notifies, so it changes nothing here.
    model_config = ConfigDict(extra="ignore", strict=True)
    filePath: str


def _validation_message(exc: ValidationError) -> str:
    parts = [f"`{'.'.join(str(p) for p in e['loc'])}`: {e['msg']}" for e in exc.errors()]
    return "invalid arguments: " + "; ".join(parts)


class IdeCompanion:
    def __init__(self, gateway: NvimGateway, clients: ClientRegistry, config: CompanionConfig) -> None:
        self._gateway = gateway
        self._clients = clients
        self._config = config
        self.diffs = DiffRegistry(clients, config.diff)
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

    def _send_snapshot(self, client: ConnectedClient) -> None:
        # Notifications sent before a client's GET stream exists are lost: send one now.
        if self._config.context.enabled:
            client.send_latest(CONTEXT_METHOD, self.context)

    # -- diffs -----------------------------------------------------------------------------

    def on_diff_decided(self, event: DiffDecided) -> None:
        """The user decided in Neovim: `:w` (accepted) or closed the view (rejected)."""
        if not self.diffs.resolve(event.path, event.id, event.action == "accepted", event.content):
            log.debug("diff event for %s with nothing pending", event.path)

    def _session_gone(self, client: ConnectedClient) -> None:
        # Nobody will answer these any more: Neovim keeps a review the user edited (orphaned).
        for pending in self.diffs.of_session(client.session_id):
            self.diffs.forget(pending.key)
            self._spawn(self._release_view(pending.key))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release_view(self, key: str, why: str | None = None) -> None:
        try:
            await self._gateway.exec_lua(RELEASE_DIFF, key, why, what="closing the review")
        except (NeovimUnavailable, NeovimCallError) as exc:
            log.warning("could not close the review of %s: %s", key, exc)

    async def withdraw_diff(self, key: str, session_id: str | None, why: str) -> None:
        """The proposing client closed its own review (it was answered in the agent): no decision is
        sent, and Neovim keeps the proposal if the user edited it (as when a session ends)."""
        pending = self.diffs.get(key)
        if pending is not None and pending.session_id == session_id:
            self.diffs.forget(pending.key)
            await self._release_view(pending.key, why)

    async def open_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = OpenDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        path, content = req.filePath, req.newContent
        problem = _check_target(path, content)
        if problem:
            return error_result(problem)
        try:
            pending, previous = self.diffs.open(
                path, session_id, len(content.encode("utf-8", "surrogatepass"))
            )
        except ReviewRefused as exc:
            return error_result(str(exc))
        if previous is not None:
            self.diffs.notify(previous, accepted=False)  # replaced: the first proposal is rejected
        try:
            reply = await self._gateway.exec_lua(
                OPEN_DIFF,
                pending.key,
                content,
                pending.id,
                self._client_name(session_id),
                what="opening the review",
            )
        except (NeovimUnavailable, NeovimCallError) as exc:
            self.diffs.forget(pending.key, pending.id)
            return error_result(f"could not open the review in Neovim: {exc}")
        if not (isinstance(reply, dict) and reply.get("ok")):
            self.diffs.forget(pending.key, pending.id)
            reason = reply.get("error") if isinstance(reply, dict) else None
            return error_result(f"could not open the review in Neovim: {reason or 'unknown error'}")
        return {"content": []}

    def _client_name(self, session_id: str | None) -> str:
        """Who proposed it, as the client named itself (initialize clientInfo), for the user's list."""
        client = self._clients.get(session_id) if session_id else None
        return client.name if client is not None else "unknown client"

    async def close_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = CloseDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        pending = self.diffs.get(req.filePath)
        if pending is None:  # already decided (or never opened): nothing to close
            return text_result("{}")
        if pending.session_id != session_id:
            return error_result(
                f"the review of {req.filePath} belongs to another session; only it can close it"
            )
        self.diffs.forget(pending.key)  # closed by the CLI: no accept/reject notification
        body: dict[str, Any] = {}
        try:
            reply = await self._gateway.exec_lua(
                CLOSE_DIFF, pending.key, pending.id, what="closing the review"
            )
        except (NeovimUnavailable, NeovimCallError) as exc:
            log.warning("could not close the review of %s: %s", pending.key, exc)
            reply = None
        if isinstance(reply, dict) and isinstance(reply.get("content"), str):
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
    if os.path.lexists(path) and not os.path.isfile(path):
        return f"{path} exists but is not a regular file"
    # A new file may be in folders that do not exist yet (Gemini CLI creates them when it
    # writes the file); the nearest existing one must be a folder.
    ancestor = os.path.dirname(path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        return f"{ancestor} is not a directory, so {path} cannot be created"
    if "\0" in content:
        return "newContent contains NUL bytes (binary data); Neovim can only review text"
    return None
