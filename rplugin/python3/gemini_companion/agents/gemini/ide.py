"""Gemini CLI's IDE companion tools and notifications: editor context for its sessions, and its
review tools `openDiff`/`closeDiff`, whose decision goes back as `ide/diffAccepted`/`ide/diffRejected`.

Python owns the protocol half (validation, which client gets which notification);
Lua (`gemini_companion.context`, `gemini_companion.review`) owns the editor half.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ...base import tcp_peer
from ...config import CompanionConfig
from ...core.reviews import PendingReview, ReviewRefused, ReviewRegistry
from ...core.sessions import ClientRegistry, ConnectedClient
from ...core.tools import NativeTool, error_result, text_result
from .context import build_context
from .pairing import AcceptedEdits

log = logging.getLogger(__name__)

CONTEXT_METHOD = "ide/contextUpdate"
# The name Gemini CLI's IDE client gives itself (the MCP TypeScript SDK's example name).
CLIENT_NAME = "streamable-http-client"
# `/ide enable` saves ide.enabled, then connects. A session is flagged when the gemini process that
# connected started before that save (a gemini that :Gemini starts after turning IDE mode on started
# after it), and only when it connects within this long of the save: a gemini that reconnects after
# our server restarted, long after some unrelated save, is not one that just switched.
_SAVE_THEN_CONNECT_S = 60.0
# A process's start time counts clock ticks (10 ms) and a file's mtime lags by up to a tick: a
# process started this little before the save may have started after it.
_CLOCK_SLACK_S = 0.05
# When the connecting process cannot be found (not Linux, another user's process, it is gone): a
# connection this soon after the save switched IDE mode on (a gemini starting fresh takes longer to
# load and connect; under load `/ide enable` may take longer too, and goes unflagged).
_SWITCHED_ON_WITHIN_S = 2.0
SWITCHED_ON_MID_PROCESS = (
    "this gemini switched IDE mode on after it started: its own Allow once/No will wait for Neovim. "
    "Answer here (:w accepts, :q rejects), or restart gemini once (/quit, then gemini)"
)
# Gemini's protocol runs over MCP's Streamable HTTP; Claude's WebSocket sessions get their own.
_TRANSPORT = "http"


def switched_on_mid_process(
    *, saved: float, connected: float, process_started: Callable[[], float | None]
) -> bool:
    """Whether a gemini session connecting at `connected` switched IDE mode on while its process ran,
    the settings file having been saved at `saved` (times in seconds since the epoch).
    `process_started` finds when the connecting process started (None: unknown); it walks /proc,
    so it is asked only after a recent save."""
    if not 0 <= connected - saved <= _SAVE_THEN_CONNECT_S:
        return False
    started = process_started()
    if started is None:
        return connected - saved <= _SWITCHED_ON_WITHIN_S
    return started < saved - _CLOCK_SLACK_S


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


class GeminiIde:
    def __init__(
        self,
        reviews: ReviewRegistry,
        clients: ClientRegistry,
        config: CompanionConfig,
        accepted: AcceptedEdits,
        *,
        settings_file: Path | None = None,
        report: Callable[[str, str], None] = lambda _message, _level: None,
    ) -> None:
        self._reviews = reviews
        self._accepted = accepted
        self._settings_file = settings_file  # gemini's user settings (GEMINI_CLI_HOME or HOME)
        self._report = report
        self._switched_on: set[str] = set()  # sessions that switched IDE mode on mid-process, unwarned
        clients.on_added.append(self._check_switched_on)
        self._clients = clients
        self._config = config
        self.context: dict[str, Any] = build_context({}, is_trusted=config.context.is_trusted)
        clients.on_stream_opened.append(self._send_snapshot)

    # -- context ---------------------------------------------------------------------------

    def on_context(self, raw: Any) -> None:
        if not self._config.context.enabled:
            return
        self.context = build_context(
            raw, is_trusted=self._config.context.is_trusted, max_files=self._config.context.max_files
        )
        self._clients.broadcast(CONTEXT_METHOD, self.context, transport=_TRANSPORT)

    def _check_switched_on(self, client: ConnectedClient) -> None:
        """gemini 0.61 passes its own Allow once/No to Neovim only in a process that started with IDE
        mode on. A session whose process was already running when the settings file turned it on
        (`/ide enable`) is flagged, and told at its first review."""
        if client.name != CLIENT_NAME or self._settings_file is None:
            return
        try:
            saved = self._settings_file.stat().st_mtime
        except OSError:
            return
        tcp = client.tcp

        def process_started() -> float | None:
            return tcp_peer.connecting_process_started_at(tcp.peer, tcp.server) if tcp else None

        if switched_on_mid_process(saved=saved, connected=time.time(), process_started=process_started):
            log.info("gemini session %s switched IDE mode on while running", client.session_id[:8])
            self._switched_on.add(client.session_id)

    def _send_snapshot(self, client: ConnectedClient) -> None:
        # Notifications sent before a client's GET stream exists are lost: send one now.
        if self._config.context.enabled and client.transport == _TRANSPORT:
            client.send_latest(CONTEXT_METHOD, self.context)

    # -- reviews ---------------------------------------------------------------------------

    def _decided(self, pending: PendingReview, accepted: bool, content: str | None) -> None:
        """Tell the proposing session, echoing its own `filePath` string (Gemini matches it exactly)."""
        client = self._clients.get(pending.session_id) if pending.session_id else None
        if client is None:
            log.info("review of %s decided, but its client is gone", pending.path)
            return
        params: dict[str, Any] = {"filePath": pending.path}
        if accepted:
            params["content"] = content or ""
        method = "ide/diffAccepted" if accepted else "ide/diffRejected"
        # Not coalesced: each outcome matters (a different path is a different key anyway).
        client.send_latest(method, params, key=f"{method}\0{pending.path}")

    async def open_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = OpenDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        if self._accepted.take(req.filePath, req.newContent):
            # The user accepted this very edit through the review gate in this turn: answered at once.
            self._answer_soon(session_id, req.filePath, req.newContent)
            return {"content": []}
        if session_id in self._switched_on:
            self._switched_on.discard(session_id)
            self._report(SWITCHED_ON_MID_PROCESS, "warn")
        try:
            await self._reviews.open(
                req.filePath, req.newContent, session_id, self._clients.name_of(session_id), self._decided
            )
        except ReviewRefused as exc:
            return error_result(str(exc))
        return {"content": []}

    def _answer_soon(self, session_id: str | None, path: str, content: str) -> None:
        """ide/diffAccepted after openDiff's own answer has gone out (gemini waits for it after that)."""
        client = self._clients.get(session_id) if session_id else None
        if client is not None:
            asyncio.get_running_loop().call_soon(
                client.send_latest,
                "ide/diffAccepted",
                {"filePath": path, "content": content},
                f"ide/diffAccepted\0{path}",
            )

    async def close_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        try:
            req = CloseDiffArgs.model_validate(args)
        except ValidationError as exc:
            return error_result(_validation_message(exc))
        try:
            content = await self._reviews.close(req.filePath, session_id)  # no accept/reject notification
        except ReviewRefused as exc:
            return error_result(str(exc))
        body = {"content": content} if content is not None else {}
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
