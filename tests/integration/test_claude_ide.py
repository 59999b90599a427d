"""Claude Code's IDE channel (WebSocket on the same port, lock file, its tools), judged by a bare
WebSocket client that speaks what the real `claude` 2.1.197 was seen to send (docs/PROTOCOL.md §12).
What the Python server does alone (the lock file's content, who may open the WebSocket, frames,
max_sessions, a stop while claude waits): tests/protocol/test_claude_channel.py. The real program
itself: test_claude_real.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_ide import (
    claude_like,
    lock_of,
    open_diff_args,
    port_of,
    proposed_buffer,
    texts,
)
from tests.support.helpers import Neovim, until, wait_for
from tests.support.shared_nvim import fresh_editor, shared_neovim

PENDING = "return vim.tbl_map(function(d) return d.path end, require('gemini_companion.review').pending())"


@pytest.fixture(scope="module")
def fake_claude(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `claude` on PATH that tells its version, as the real one does."""
    fake = tmp_path_factory.mktemp("bin") / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    fake.chmod(0o755)
    return fake


@pytest.fixture(scope="module")
def module_nvim(tmp_path_factory: pytest.TempPathFactory, fake_claude: Path) -> Iterator[Neovim]:
    """The Neovim the tests share that only use the editor and the channel (tests/support/shared_nvim.py)."""
    env = {"PATH": f"{fake_claude.parent}:{os.environ['PATH']}"}
    with shared_neovim(tmp_path_factory.mktemp("claude_ide"), env=env) as nvim:
        yield nvim


@pytest.fixture
def nvim(module_nvim: Neovim) -> Neovim:
    return fresh_editor(module_nvim)


@pytest.fixture
def lock(nvim: Neovim) -> dict[str, Any]:
    return lock_of(nvim)[1]


# -- discovery -----------------------------------------------------------------------------


def test_claude_in_terminal_finds_the_port_and_the_lock_goes_at_stop_and_at_quit(make_nvim: Any) -> None:
    nvim: Neovim = make_nvim()  # its own: it stops the server and quits
    state = nvim.wait_state("running")
    path, data = lock_of(nvim)
    assert path.name == f"{state['port']}.lock"
    assert data["pid"] == nvim.lua("return vim.fn.getpid()")  # Neovim itself, not the Python host
    # claude in :terminal finds this server with no variable typed by the user.
    assert nvim.lua("return vim.env.CLAUDE_CODE_SSE_PORT") == str(state["port"])
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    wait_for(lambda: not path.exists(), 10, what="lock file removed")
    assert nvim.lua("return vim.env.CLAUDE_CODE_SSE_PORT") is None
    nvim.api.command("GeminiStart")
    state = nvim.wait_state("running")
    path, _ = lock_of(nvim)
    assert nvim.lua("return vim.env.CLAUDE_CODE_SSE_PORT") == str(state["port"])
    assert nvim.quit() == 0
    assert not path.exists()


# -- tools ---------------------------------------------------------------------------------


def test_claude_session_lists_ide_and_general_tools_gemini_keeps_its_own(
    nvim: Neovim, lock: dict[str, Any]
) -> None:
    from tests.support.helpers import mcp_client

    url = nvim.wait_discovery().url

    port = port_of(nvim)

    async def run() -> tuple[set[str], set[str], list[dict[str, Any]]]:
        async with claude_like(port, lock["authToken"]) as claude:
            listed = (await claude.request("tools/list"))["result"]["tools"]
            status = await claude.call("companion_status", {})
            async with mcp_client(url, lock["authToken"]) as gemini:
                theirs = {t.name for t in (await gemini.list_tools()).tools}
            return {t["name"] for t in listed}, theirs, [json.loads(texts(status)[0])]

    ours, theirs, status = asyncio.run(run())
    ide_tools = {
        "openDiff", "close_tab", "closeAllDiffTabs", "getDiagnostics", "openFile", "getCurrentSelection",
        "getLatestSelection", "getOpenEditors", "getWorkspaceFolders", "checkDocumentDirty", "saveDocument",
    }  # fmt: skip
    assert ide_tools <= ours
    assert "executeCode" not in ours  # (no Jupyter kernel: offered, it could only fail after a prompt)
    assert {"get_diagnostics", "list_buffers", "companion_status"} <= ours  # our general tools too
    assert "closeDiff" not in ours
    assert not (ide_tools - {"openDiff"}) & theirs and {"openDiff", "closeDiff"} <= theirs
    clients = status[0]["clients"]
    assert [(c["name"], c["transport"]) for c in clients] == [("claude-code", "ws")]


def test_editor_tools_answer_from_neovim(nvim: Neovim, lock: dict[str, Any]) -> None:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\ntwo\nthree\n")
    nvim.api.command("edit a.py")
    nvim.lua(
        "local ns = vim.api.nvim_create_namespace('t'); vim.diagnostic.set(ns, 0, "
        "{{lnum = 1, col = 0, message = 'bad two', severity = vim.diagnostic.severity.ERROR}})"
    )
    nvim.api.command("normal! ggjVj")  # lines 2-3 selected, still in Visual mode

    port = port_of(nvim)

    async def run() -> dict[str, Any]:
        async with claude_like(port, lock["authToken"]) as claude:
            out = {name: await claude.call(name, {}) for name in ("getDiagnostics", "getCurrentSelection")}
            out["one"] = await claude.call("getDiagnostics", {"uri": (ws / "a.py").as_uri()})
            out["folders"] = await claude.call("getWorkspaceFolders", {})
            out["editors"] = await claude.call("getOpenEditors", {})
            await asyncio.to_thread(nvim.api.command, "execute \"normal! \\<Esc>\" | call setline(1, 'ONE')")
            out["dirty"] = await claude.call("checkDocumentDirty", {"filePath": str(ws / "a.py")})
            out["save"] = await claude.call("saveDocument", {"filePath": str(ws / "a.py")})
            out["open"] = await claude.call("openFile", {"filePath": str(ws / "b.txt")})
            return out

    (ws / "b.txt").write_text("bee\n")
    out = asyncio.run(run())
    diagnostics = json.loads(texts(out["getDiagnostics"])[0])
    assert diagnostics == json.loads(texts(out["one"])[0])
    assert diagnostics[0]["uri"] == (ws / "a.py").as_uri()
    assert diagnostics[0]["diagnostics"][0]["message"] == "bad two"
    assert diagnostics[0]["diagnostics"][0]["severity"] == "Error"
    selection = json.loads(texts(out["getCurrentSelection"])[0])
    assert selection["text"] == "two\nthree"
    assert selection["selection"]["start"]["line"] == 1 and selection["selection"]["end"]["line"] == 2
    assert json.loads(texts(out["folders"])[0])["folders"][0]["path"] == str(ws)
    assert [t["label"] for t in json.loads(texts(out["editors"])[0])["tabs"]] == ["a.py"]
    assert json.loads(texts(out["dirty"])[0])["isDirty"] is True
    assert json.loads(texts(out["save"])[0])["saved"] is True
    assert (ws / "a.py").read_text() == "ONE\ntwo\nthree\n"
    assert nvim.lua("return vim.fn.expand('%:t')") == "b.txt"


# -- reviews -------------------------------------------------------------------------------


def test_open_diff_blocks_until_write_with_the_users_edit(nvim: Neovim, lock: dict[str, Any]) -> None:
    target = nvim.workspace / "f.txt"
    target.write_text("old\n")

    port = port_of(nvim)

    async def run() -> dict[str, Any]:
        async with claude_like(port, lock["authToken"]) as claude:
            call = claude.start(
                "tools/call", {"name": "openDiff", "arguments": open_diff_args(target, "new\n")}
            )
            buf = await asyncio.to_thread(proposed_buffer, nvim)
            assert not call.done()
            await asyncio.to_thread(nvim.lua, "vim.api.nvim_buf_set_lines(..., -1, -1, false, {'mine'})", buf)
            await asyncio.to_thread(
                nvim.lua, "vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", buf
            )
            return (await call)["result"]

    result = asyncio.run(run())
    assert texts(result) == ["FILE_SAVED", "new\nmine\n"]
    assert target.read_text() == "old\n"  # claude writes it, not Neovim


def test_open_diff_closed_is_rejected_and_close_tab_closes_a_review(
    nvim: Neovim, lock: dict[str, Any]
) -> None:
    target = nvim.workspace / "f.txt"
    target.write_text("old\n")

    port = port_of(nvim)

    async def run() -> tuple[list[str], list[str], list[str]]:
        async with claude_like(port, lock["authToken"]) as claude:
            args = open_diff_args(target, "new\n")
            call = claude.start("tools/call", {"name": "openDiff", "arguments": args})
            buf = await asyncio.to_thread(proposed_buffer, nvim)
            await asyncio.to_thread(nvim.lua, "vim.api.nvim_buf_delete(..., {force = true})", buf)
            rejected = texts((await call)["result"])
            # The user answers in claude's prompt instead: claude only sends close_tab.
            call = claude.start("tools/call", {"name": "openDiff", "arguments": args})
            await asyncio.to_thread(proposed_buffer, nvim)
            closed = texts(await claude.call("close_tab", {"tab_name": args["tab_name"]}))
            await asyncio.to_thread(wait_for, lambda: nvim.lua(PENDING) == [], 20, what="review closed")
            await call
            again = texts(await claude.call("close_tab", {"tab_name": args["tab_name"]}))
            return rejected, closed, again

    rejected, closed, again = asyncio.run(run())
    assert rejected == ["DIFF_REJECTED", "✻ [Claude Code] f.txt ⧉"]
    assert closed == again == ["TAB_CLOSED"]
    assert target.read_text() == "old\n"


# -- notifications -------------------------------------------------------------------------


def test_selection_and_at_mention_reach_claude(nvim: Neovim, lock: dict[str, Any]) -> None:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\ntwo\nthree\n")
    nvim.api.command("edit a.py")

    port = port_of(nvim)

    async def run() -> tuple[dict[str, Any], dict[str, Any], bool]:
        async with claude_like(port, lock["authToken"]) as claude:
            connected = "return require('gemini_companion.mention').claude_connected()"
            await asyncio.to_thread(wait_for, lambda: nvim.lua(connected), 20)
            await asyncio.to_thread(nvim.api.command, "normal! jvj")
            selection = await until(
                lambda: next(
                    (n["params"] for n in claude.notifications if n["method"] == "selection_changed"
                     and n["params"]["text"]),
                    None,
                ),
                what="selection_changed",
            )  # fmt: skip
            delivered = await asyncio.to_thread(
                nvim.lua,
                "return require('gemini_companion.mention').at_mentioned(...)",
                str(ws / "a.py"),
                2,
                3,
            )
            mention = await until(
                lambda: next(
                    (n["params"] for n in claude.notifications if n["method"] == "at_mentioned"), None
                ),
                what="at_mentioned",
            )
            # The user goes to a terminal (the selection stays: what claude shows), then the selected file
            # closes: claude is told there is no selection any more (else it sends the old text with each
            # prompt).
            await asyncio.to_thread(nvim.lua, "vim.cmd('normal! ggjVj') vim.cmd('terminal')")
            shown = await until(
                lambda: [n["params"] for n in claude.notifications if n["method"] == "selection_changed"
                         and n["params"]["text"].startswith("two\nthree")],
                what="lines 2-3 selected",
            )  # fmt: skip
            seen = len(claude.notifications)
            await asyncio.to_thread(nvim.api.command, "bwipeout! a.py")
            cleared = await until(
                lambda: next(
                    (n["params"] for n in claude.notifications[seen:] if n["method"] == "selection_changed"),
                    None,
                ),
                what="the selection cleared",
            )
            assert shown
            assert cleared["text"] == "" and cleared["selection"]["isEmpty"] is True
            assert cleared["filePath"] == str(ws / "a.py")
            return selection, mention, delivered

    selection, mention, delivered = asyncio.run(run())
    assert selection["text"] == "two\nt"
    assert selection["filePath"] == str(ws / "a.py")
    assert selection["selection"]["start"] == {"line": 1, "character": 0}
    assert selection["selection"]["end"]["line"] == 2 and selection["selection"]["isEmpty"] is False
    assert delivered is True
    assert mention == {"filePath": str(ws / "a.py"), "lineStart": 1, "lineEnd": 2}
    wait_for(lambda: not nvim.lua("return require('gemini_companion.mention').claude_connected()"))
    assert (
        nvim.lua("return require('gemini_companion.mention').at_mentioned(...)", str(ws / "a.py"), 1, 1)
        is False
    )


# -- both agents at once -------------------------------------------------------------------


def test_gemini_and_claude_reviews_never_mix(nvim: Neovim, lock: dict[str, Any]) -> None:
    from tests.support.node_driver import NodeDriver

    ws = nvim.workspace
    (ws / "a.py").write_text("a\n")
    (ws / "b.py").write_text("b\n")
    port, disc = port_of(nvim), nvim.wait_discovery()

    def gemini_outcomes(gemini: NodeDriver) -> list[tuple[str, str]]:
        return [
            (e["method"], e["params"]["filePath"])
            for e in list(gemini.events)
            if e.get("event") == "notification" and str(e.get("method")).startswith("ide/diff")
        ]

    with NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=nvim.base) as gemini:
        gemini.wait_event(lambda e: e.get("event") == "connected", what="connected")
        assert gemini.send("call", name="openDiff", args={"filePath": str(ws / "a.py"), "newContent": "A\n"})[
            "ok"
        ]
        wait_for(lambda: nvim.lua(PENDING) == [str(ws / "a.py")], what="gemini's review")

        async def run() -> tuple[list[str], list[str], list[str], list[dict[str, Any]]]:
            async with claude_like(port, lock["authToken"]) as claude:
                mine = claude.start(
                    "tools/call", {"name": "openDiff", "arguments": open_diff_args(ws / "b.py", "B\n")}
                )
                await asyncio.to_thread(wait_for, lambda: len(nvim.lua(PENDING)) == 2, 20)
                await asyncio.to_thread(nvim.api.command, "GeminiReviews")
                listed = await asyncio.to_thread(lambda: nvim.api.current.buffer[:])
                await asyncio.to_thread(nvim.api.input, "q")  # close the list
                assert [re.split(r"\s{2,}", line)[:2] for line in listed] == [
                    ["a.py", "nvim-gemini-test-ts-client"],
                    ["b.py", "Claude Code"],
                ]
                theirs = await claude.call("openDiff", open_diff_args(ws / "a.py", "claude's\n"))
                closed = texts(await claude.call("closeAllDiffTabs", {}))
                rejected = texts((await mine)["result"])  # closing all of its own reviews answers its call
                mine = claude.start(
                    "tools/call", {"name": "openDiff", "arguments": open_diff_args(ws / "b.py", "B\n")}
                )
                find = (
                    "for _, d in ipairs(require('gemini_companion.review').pending()) do"
                    " if d.path == ... then return d.proposed_buf end end"
                )
                buf = await asyncio.to_thread(wait_for, lambda: nvim.lua(find, str(ws / "b.py")), 20)
                await asyncio.to_thread(
                    nvim.lua, "vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", buf
                )
                accepted = texts((await mine)["result"])
                assert texts(theirs)[0].startswith(f"{ws / 'a.py'} is under review for another session")
                # claude asks "Do you want to make this edit" all the same: Neovim says why it shows none.
                warned = [str(m) for m, level in await asyncio.to_thread(nvim.notifications) if level == 3]
                assert any(
                    "claude's edit to a.py was not opened for review here" in m
                    and "is under review for another session" in m
                    and m.endswith("answer in claude's prompt")
                    for m in warned
                ), warned
                return closed, rejected, accepted, claude.notifications

        closed, rejected, accepted, to_claude = asyncio.run(run())
        assert closed == ["CLOSED_1_DIFF_TABS"] and rejected[0] == "DIFF_REJECTED"
        assert accepted == ["FILE_SAVED", "B\n"]
        assert nvim.lua(PENDING) == [str(ws / "a.py")]  # gemini's review still waits for the user
        assert gemini_outcomes(gemini) == []  # nothing of claude's reached gemini
        nvim.lua("require('gemini_companion.review').reject(...)", str(ws / "a.py"))
        gemini.wait_event(lambda e: e.get("method") == "ide/diffRejected", what="gemini's rejection")
        assert gemini_outcomes(gemini) == [("ide/diffRejected", str(ws / "a.py"))]
        assert not [n for n in to_claude if str(n["method"]).startswith("ide/")]


def test_status_and_health_name_claude_and_its_protocol(nvim: Neovim, fake_claude: Path) -> None:
    fake = fake_claude
    path, data = lock_of(nvim)
    port = port_of(nvim)

    async def run() -> tuple[list[str], str, str]:
        async with claude_like(port, data["authToken"]) as _claude:
            statusline = "return require('gemini_companion').statusline()"
            await asyncio.to_thread(wait_for, lambda: nvim.lua(statusline) == "Gemini ● 1 + Claude", 20)
            lines = await asyncio.to_thread(nvim.lua, "return require('gemini_companion.status').lines()")
            return lines, await asyncio.to_thread(nvim.health), await asyncio.to_thread(nvim.lua, statusline)

    lines, text, _ = asyncio.run(run())
    section = text[text.index("Claude Code (claude in :terminal)") :]
    assert any(
        "Claude Code 2.1.197  Claude Code IDE (WebSocket), protocol 2025-11-25" in line for line in lines
    )
    assert any(line.endswith(f"lock file {path}") for line in lines)
    assert (
        f"lock file {path}: claude in :terminal connects by itself (CLAUDE_CODE_SSE_PORT={port})" in section
    )
    assert f"claude 2.1.197 ({fake})" in section
    assert "connected now: Claude Code 2.1.197 over Claude Code's IDE WebSocket" in text


def test_a_second_proposal_for_the_file_rejects_the_first_and_is_the_one_answered(
    nvim: Neovim, lock: dict[str, Any]
) -> None:
    target = nvim.workspace / "f.txt"
    target.write_text("old\n")
    port = port_of(nvim)

    async def run() -> tuple[list[str], list[str]]:
        async with claude_like(port, lock["authToken"]) as claude:
            first = claude.start(
                "tools/call", {"name": "openDiff", "arguments": open_diff_args(target, "one\n")}
            )
            await asyncio.to_thread(proposed_buffer, nvim)
            second = claude.start(
                "tools/call", {"name": "openDiff", "arguments": open_diff_args(target, "two\n")}
            )
            rejected = texts((await first)["result"])
            buf = await asyncio.to_thread(
                wait_for,
                lambda: nvim.lua(
                    "for _, b in ipairs(vim.api.nvim_list_bufs()) do local d = vim.b[b].gemini_diff if d "
                    "and d.role == 'proposed' and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] == 'two' "
                    "then return b end end"
                ),
                20,
            )
            await asyncio.to_thread(
                nvim.lua, "vim.api.nvim_buf_call(..., function() vim.cmd('write') end)", buf
            )
            return rejected, texts((await second)["result"])

    rejected, accepted = asyncio.run(run())
    assert rejected[0] == "DIFF_REJECTED"
    assert accepted == ["FILE_SAVED", "two\n"]


def test_open_file_selects_between_texts_and_latest_selection_outlives_visual_mode(
    nvim: Neovim, lock: dict[str, Any]
) -> None:
    ws = nvim.workspace
    (ws / "a.py").write_text("def f():\n    x = 1\n    return x\n\nprint(f())\n")
    (ws / "b.txt").write_text("one\ntwo\n")
    port = port_of(nvim)
    nvim.api.command("edit b.txt")
    nvim.api.command("normal! Vj")
    nvim.api.command('execute "normal! \\<Esc>"')

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with claude_like(port, lock["authToken"]) as claude:
            latest = await claude.call("getLatestSelection", {})
            args = {"filePath": str(ws / "a.py"), "startText": "x = 1", "endText": "return x"}
            opened = await claude.call("openFile", args)
            return latest, opened

    latest, opened = asyncio.run(run())
    assert json.loads(texts(latest)[0])["text"] == "one\ntwo"
    assert texts(opened) == [f"Opened file: {ws / 'a.py'}"]
    assert nvim.lua("return vim.fn.expand('%:t')") == "a.py"
    assert nvim.api.call("mode") == "V"
    assert nvim.lua("return {vim.fn.line('v'), vim.fn.line('.')}") == [2, 3]


def test_health_calls_a_lock_file_claude_cannot_find_an_error(make_nvim: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "nvim" / "claude").mkdir(parents=True)
    (tmp_path / "nvim" / "claude" / "ide").symlink_to(elsewhere)  # e.g. planted by another user
    nvim = make_nvim()
    nvim.wait_state("running")
    wait_for(lambda: nvim.server_state().get("claude_error"), what="the lock file refused")
    text = nvim.health()
    section = text[text.index("Claude Code (claude in :terminal)") :]
    first = next(line for line in section.splitlines()[1:] if line.strip())
    assert first.lstrip("- ").startswith("❌ ERROR") and "symbolic link" in first, first
    assert list(elsewhere.iterdir()) == []


def test_open_file_keeps_claudes_terminal_and_diagnostics_are_of_files(
    nvim: Neovim, lock: dict[str, Any]
) -> None:
    ws = nvim.workspace
    (ws / "a.py").write_text("one\n")
    nvim.api.command("terminal")  # claude's terminal, the only window
    terminal = nvim.api.current.buffer.number
    nvim.lua(
        """
        local buf = vim.api.nvim_create_buf(false, true)
        vim.api.nvim_buf_set_name(buf, vim.fn.getcwd() .. '/a.py (proposed)')
        vim.bo[buf].buftype = 'acwrite'
        vim.b[buf].gemini_diff = true
        vim.diagnostic.set(vim.api.nvim_create_namespace('t'), buf, {{lnum = 0, col = 0, message = 'linted'}})
        """
    )
    port = port_of(nvim)

    async def run() -> dict[str, Any]:
        async with claude_like(port, lock["authToken"]) as claude:
            return {
                "diagnostics": await claude.call("getDiagnostics", {}),
                "open": await claude.call("openFile", {"filePath": str(ws / "a.py")}),
                "missing": await claude.call("openFile", {"filePath": str(ws / "nope.py")}),
            }

    out = asyncio.run(run())
    assert json.loads(texts(out["diagnostics"])[0]) == []  # the proposal buffer is no file
    assert texts(out["open"]) == [f"Opened file: {ws / 'a.py'}"]
    shown = nvim.lua("return vim.tbl_map(vim.api.nvim_win_get_buf, vim.api.nvim_tabpage_list_wins(0))")
    assert terminal in shown and nvim.api.current.buffer.name == str(ws / "a.py")
    assert out["missing"]["isError"] is True and texts(out["missing"]) == [f"no such file: {ws / 'nope.py'}"]
    assert not (ws / "nope.py").exists()


def test_a_review_the_user_edited_outlives_claude_closing_it(nvim: Neovim, lock: dict[str, Any]) -> None:
    target = nvim.workspace / "f.txt"
    target.write_text("old\n")
    port = port_of(nvim)

    async def run() -> list[str]:
        async with claude_like(port, lock["authToken"]) as claude:
            args = open_diff_args(target, "new\n")
            call = claude.start("tools/call", {"name": "openDiff", "arguments": args})
            buf = await asyncio.to_thread(proposed_buffer, nvim)
            await asyncio.to_thread(nvim.lua, "vim.api.nvim_buf_set_lines(..., -1, -1, false, {'mine'})", buf)
            # The user then answers in claude's prompt: claude writes its own text and closes the tab.
            closed = texts(await claude.call("close_tab", {"tab_name": args["tab_name"]}))
            await call
            return closed

    assert asyncio.run(run()) == ["TAB_CLOSED"]
    orphans = (
        "return vim.tbl_map(function(d) return d.proposed_buf end, require('gemini_companion.review')"
        ".orphaned())"
    )
    (kept,) = wait_for(lambda: nvim.lua(orphans), what="the edited proposal kept")
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", kept) == ["new", "mine"]
    warned = [str(m) for m, level in nvim.notifications() if level == 3]
    assert any(
        "answered in claude's prompt, so your edited proposal for f.txt stays open" in m for m in warned
    )
    assert target.read_text() == "old\n"
