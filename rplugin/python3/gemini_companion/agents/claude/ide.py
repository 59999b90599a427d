"""Claude Code's IDE protocol on our WebSocket: its tools and notifications, from the same machinery.

A Claude session is an ordinary MCP session of the SDK (`ws_transport`), tracked in the same
`ClientRegistry` and limited as over HTTP. What differs is answered here (docs/PROTOCOL.md §12):
- its `tools/list`: Claude's IDE tools, then our general tools (Gemini's `openDiff`/`closeDiff`
  are for Gemini sessions only);
- `openDiff` blocks until the user decides, through the same review as Gemini's (`reviews.py`):
  the review's owner callback answers the call;
- the editor context goes out as `selection_changed` (Gemini's `ide/contextUpdate` is sent over
  HTTP only).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from ...config import MAX_SELECTION_CHARS
from ...core.review_gate import current_text
from ...core.reviews import PendingReview, ReviewRefused, ReviewRegistry, normalise
from ...core.sessions import ClientRegistry, ConnectedClient
from ...core.tools import NativeTool, ToolCatalog, error_result, text_result
from ...http.mcp_app import build_server, session_id_of
from ...http.sdk_compat import ToolsListChangedServer
from ...http.ws_transport import WebSocketRoute
from ...nvim.gateway import NeovimCallError, NeovimUnavailable, NvimGateway
from ...seam import AGENT_TOOL, ClaudeToolError
from .gate import ClaudeGate

log = logging.getLogger(__name__)

GEMINI_ONLY = frozenset({"openDiff", "closeDiff"})  # Gemini's review tools, with Gemini's shapes
SELECTION_METHOD = "selection_changed"
MENTION_METHOD = "at_mentioned"
# Editor-shaped tools answered by lua/gemini_companion/agents/claude/tools.lua (name -> input properties).
_LUA_TOOLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "getDiagnostics": (
        "Get language diagnostics (errors, warnings) from Neovim, for one file:// uri or all files",
        {"uri": {"type": "string"}},
        [],
    ),
    "openFile": (
        "Open a file in Neovim, optionally selecting from startText to endText",
        {
            "filePath": {"type": "string"},
            "preview": {"type": "boolean"},
            "startText": {"type": "string"},
            "endText": {"type": "string"},
            "selectToEndOfLine": {"type": "boolean"},
            "makeFrontmost": {"type": "boolean"},
        },
        ["filePath"],
    ),
    "getCurrentSelection": ("The current selection in Neovim's active file", {}, []),
    "getLatestSelection": ("The most recent selection in any file", {}, []),
    "getOpenEditors": ("The files open in Neovim", {}, []),
    "checkDocumentDirty": (
        "Whether a file has unsaved changes",
        {"filePath": {"type": "string"}},
        ["filePath"],
    ),
    "saveDocument": ("Save a file's buffer", {"filePath": {"type": "string"}}, ["filePath"]),
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


@dataclass
class _Review:
    """An `openDiff` call waiting for the user."""

    session_id: str | None
    key: str
    tab_name: str
    outcome: asyncio.Future[tuple[bool, str | None]]


class ClaudeIde:
    def __init__(
        self,
        *,
        gateway: NvimGateway,
        registry: ClientRegistry,
        catalog: ToolCatalog,
        reviews: ReviewRegistry,
        gate: str,
        max_file_bytes: int,
        max_message_bytes: int,
        version: str,
        workspace_roots: Callable[[], list[str]],
        report: Callable[[str, str], None],
        turn_ended: Callable[[str], None] = lambda _agent: None,
    ) -> None:
        self._gateway = gateway
        self._report = report  # a message for the user in Neovim
        self._registry = registry
        self._catalog = catalog  # our general tools (LSP, DAP, undo, Lua-registered)
        self._reviews = reviews
        # Its PreToolUse hook's tool (`review.gate`): the review of edits claude makes without asking.
        self.gate = ClaudeGate(
            *(reviews, lambda: gate, registry.name_of),
            lambda path: current_text(path, max_file_bytes),
            turn_ended,
        )
        self._workspace_roots = workspace_roots
        self._tools = ToolCatalog(gateway)  # Claude's own: validation and shape limits as for ours
        for tool in self._own_tools():
            self._tools.add_native(tool)
        self._own_names = frozenset(t.name for t in self._tools.list_tools())
        self._waiting: dict[str | None, list[_Review]] = {}  # openDiff calls waiting for the user
        self._selection: dict[str, Any] | None = None
        self.route = WebSocketRoute(
            self._build_server(version),
            max_message_bytes=max_message_bytes,
            may_open_session=registry.make_room,
        )
        registry.on_added.append(self._adopt)

    # -- sessions --------------------------------------------------------------------------

    def _build_server(self, version: str) -> ToolsListChangedServer:
        async def list_tools(
            ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            general = [t for t in self._catalog.list_tools() if t.name not in GEMINI_ONLY | self._own_names]
            return types.ListToolsResult(tools=self._tools.list_tools() + general)

        async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            session_id = session_id_of(ctx)
            if params.name in self._own_names:
                return await self._tools.call(params.name, params.arguments, session_id)
            if params.name in GEMINI_ONLY:
                return error_result(f"unknown tool {params.name!r}")
            return await self._catalog.call(params.name, params.arguments, session_id)

        return build_server(version, self._registry, list_tools, call_tool)

    def _adopt(self, client: ConnectedClient) -> None:
        if client.session_id in self.route.session_ids:
            client.transport = "ws"
            if self._selection is not None:
                client.send_latest(SELECTION_METHOD, self._selection)

    def _claude_clients(self) -> list[ConnectedClient]:
        clients = (self._registry.get(session_id) for session_id in list(self.route.session_ids))
        return [client for client in clients if client is not None]

    # -- lock file -------------------------------------------------------------------------

    # -- notifications ---------------------------------------------------------------------

    def on_context(self, raw: Any) -> None:
        """The editor context changed: tell Claude sessions about the selection when it did."""
        selection = selection_of(raw)
        if selection is None and self._selection is not None and self._selection["text"]:
            # The selected file is gone (closed): claude would keep sending its text with each prompt.
            selection = {**self._selection, "text": ""}
            start = selection["selection"]["start"]
            selection["selection"] = {"start": start, "end": start, "isEmpty": True}
        if selection is None or selection == self._selection:
            return
        self._selection = selection
        for client in self._claude_clients():
            client.send_latest(SELECTION_METHOD, selection)

    def at_mentioned(self, path: str, line_start: int | None, line_end: int | None) -> int:
        params: dict[str, Any] = {"filePath": path}
        if line_start is not None and line_end is not None:
            params.update(lineStart=line_start, lineEnd=line_end)
        clients = self._claude_clients()
        for client in clients:
            client.send_latest(MENTION_METHOD, params, key=f"{MENTION_METHOD}\0{path}\0{line_start}")
        return len(clients)

    # -- reviews ---------------------------------------------------------------------------

    async def _open_diff(self, args: dict[str, Any], session_id: str | None) -> Any:
        path, content, tab_name = args["new_file_path"], args["new_file_contents"], args["tab_name"]
        review = _Review(session_id, normalise(path), tab_name, asyncio.get_running_loop().create_future())
        waiting = self._waiting.setdefault(session_id, [])
        waiting.append(review)

        def decided(_pending: PendingReview, accepted: bool, final: str | None) -> None:
            if not review.outcome.done():
                review.outcome.set_result((accepted, final))

        try:
            await self._reviews.open(path, content, session_id, self._registry.name_of(session_id), decided)
        except ReviewRefused as exc:
            # claude asks "Do you want to make this edit" all the same: say why Neovim shows none.
            self._report(
                f"claude's edit to {os.path.basename(path)} was not opened for review here ({exc}): "
                "answer in claude's prompt",
                "warn",
            )
            waiting.remove(review)
            return error_result(str(exc))
        try:
            accepted, final = await review.outcome
        finally:
            waiting.remove(review)
            if not waiting:
                self._waiting.pop(session_id, None)
        if accepted:
            # claude writes the file itself, with this text (the user's edits included).
            return _texts("FILE_SAVED", final or "")
        return _texts("DIFF_REJECTED", tab_name)

    async def _close_tab(self, args: dict[str, Any], session_id: str | None) -> Any:
        # The user answered in claude's own prompt: claude only closes the tab, never cancels openDiff.
        for review in list(self._waiting.get(session_id) or ()):
            if review.tab_name == args["tab_name"]:
                await self._withdraw(review)
        return text_result("TAB_CLOSED")

    async def _close_all(self, _args: dict[str, Any], session_id: str | None) -> Any:
        reviews = list(self._waiting.get(session_id) or ())  # this session's reviews, nobody else's
        for review in reviews:
            await self._withdraw(review)
        return text_result(f"CLOSED_{len(reviews)}_DIFF_TABS")

    async def _withdraw(self, review: _Review) -> None:
        # claude writes its own proposal (or nothing): an edit the user made in Neovim would be lost.
        why = "answered in claude's prompt"
        await self._reviews.withdraw(review.key, review.session_id, why)
        if not review.outcome.done():
            review.outcome.set_result((False, None))

    # -- the other tools -------------------------------------------------------------------

    async def _workspace_folders(self, _args: dict[str, Any], _session_id: str | None) -> Any:
        return _json(workspace_folders(self._workspace_roots()))

    def _lua_tool(self, name: str) -> Callable[[dict[str, Any], str | None], Any]:
        async def handler(args: dict[str, Any], _session_id: str | None) -> Any:
            try:
                reply = await self._gateway.exec_lua(AGENT_TOOL, "claude", name, args, what=name)
            except (NeovimUnavailable, NeovimCallError) as exc:
                return error_result(f"{name}: {exc}")
            failure = ClaudeToolError.parse(reply).error if isinstance(reply, dict) else None
            if failure is not None:
                return error_result(failure)
            return text_result(reply) if isinstance(reply, str) else _json(reply)

        return handler

    def _own_tools(self) -> list[NativeTool]:
        string = {"type": "string"}
        tools = [
            NativeTool(
                "openDiff",
                "Show a proposed new content of a file as a review in Neovim; answers once the user "
                "decides: FILE_SAVED and the final text (:w), or DIFF_REJECTED (closed)",
                _schema(
                    {
                        "old_file_path": string,
                        "new_file_path": string,
                        "new_file_contents": string,
                        "tab_name": string,
                    },
                    ["new_file_path", "new_file_contents", "tab_name"],
                ),
                self._open_diff,
            ),
            NativeTool(
                "close_tab",
                "Close a review by its tab name",
                _schema({"tab_name": string}, ["tab_name"]),
                self._close_tab,
            ),
            NativeTool("closeAllDiffTabs", "Close this session's reviews", _schema({}, []), self._close_all),
            NativeTool(
                "getWorkspaceFolders", "Neovim's workspace folders", _schema({}, []), self._workspace_folders
            ),
        ]
        tools.extend(self.gate.tools())
        for name, (description, properties, required) in _LUA_TOOLS.items():
            tools.append(NativeTool(name, description, _schema(properties, required), self._lua_tool(name)))
        return tools


def selection_of(raw: Any) -> dict[str, Any] | None:
    """`selection_changed` params from context.lua's snapshot (its active file's `selection`)."""
    files = raw.get("openFiles") if isinstance(raw, dict) else None
    active = next((f for f in files or () if isinstance(f, dict) and f.get("isActive")), None)
    if active is None or not isinstance(active.get("path"), str):
        return None
    selected = active.get("selectedText")
    # (context.lua cuts it already; the same bound as Gemini's)
    text = selected[:MAX_SELECTION_CHARS] if isinstance(selected, str) else ""
    cursor = _position(active.get("cursor")) or {"line": 1, "character": 1}  # 1-based, as Gemini's
    here = {"line": max(0, cursor["line"] - 1), "character": max(0, cursor["character"] - 1)}
    span = active.get("selection") if isinstance(active.get("selection"), dict) else None
    start = _position(span.get("start")) if span else None
    end = _position(span.get("end")) if span else None
    empty = not text or start is None or end is None
    return {
        "text": text if not empty else "",
        "filePath": active["path"],
        "fileUrl": Path(active["path"]).as_uri(),
        "selection": {"start": start or here, "end": end or here, "isEmpty": empty},
    }


def workspace_folders(paths: list[str]) -> dict[str, Any]:
    """getWorkspaceFolders' answer for `paths` (absolute already: workspace.absolute_roots)."""
    folders = [{"name": os.path.basename(p) or p, "uri": Path(p).as_uri(), "path": p} for p in paths]
    return {"success": True, "folders": folders, "rootPath": paths[0] if paths else ""}


def _position(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    line, character = raw.get("line"), raw.get("character")
    if not (isinstance(line, int) and isinstance(character, int)) or line < 0 or character < 0:
        return None
    return {"line": line, "character": character}


def _texts(*texts: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text) for text in texts])


def _json(value: Any) -> types.CallToolResult:
    return text_result(json.dumps(value, ensure_ascii=False))
