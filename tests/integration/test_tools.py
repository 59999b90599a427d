"""Neovim as an MCP tool server: the Lua registry and the built-in tools, through real clients."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import ROOT, Neovim, mcp_client, wait_for
from tests.support.node_driver import NodeDriver
from tests.support.shared_nvim import fresh_editor, shared_neovim
from tests.support.tool_calls import ToolSession

# A test's calls to one server share a session of the Python SDK client: a session per call cost
# more than many a call. Closed after each test.
_sessions: dict[tuple[str, str], ToolSession] = {}


@pytest.fixture(autouse=True)
def tool_sessions(make_nvim: Any) -> Iterator[None]:
    yield  # (closed before the test's own Neovims quit: make_nvim's teardown comes after)
    while _sessions:
        _sessions.popitem()[1].close()


def run_tool(nvim: Neovim, name: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """(is_error, structured value or text) of one call through the Python SDK client."""
    disc = nvim.wait_discovery()
    key = (disc.url, disc.token)
    if key not in _sessions:
        _sessions[key] = ToolSession(*key)
    result = _sessions[key].call(name, args or {})
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    try:
        return False, json.loads(text)
    except ValueError:
        return False, text


def ts_client(nvim: Neovim) -> NodeDriver:
    disc = nvim.wait_discovery()
    ts = NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=nvim.base)
    ts.wait_event(lambda e: e.get("event") == "connected", what="connected")
    return ts


def tool_text(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"]) if reply["result"]["content"] else ""


# -- the registry -------------------------------------------------------------------------

# The example tools the tests need: registered by the tests, not shipped.
EXAMPLE_TOOLS = (
    f"for _, spec in ipairs(dofile('{ROOT / 'tests' / 'fixtures' / 'example_tools.lua'}')) do"
    " require('gemini_companion').register(spec) end\n"
)

REGISTER_GREP = """
require('gemini_companion').register({
  name = 'grep_buffer', description = 'Lines of a buffer matching a Lua pattern',
  args = { pattern = { type = 'string', description = 'Lua pattern', required = true },
           bufnr = { type = 'number', description = '0 = current', default = 0 } },
  execute = function(args)
    local out = {}
    for i, l in ipairs(vim.api.nvim_buf_get_lines(args.bufnr, 0, -1, false)) do
      if l:match(args.pattern) then table.insert(out, { line = i, text = l }) end
    end
    return { matches = out, bufnr = args.bufnr }
  end,
})
"""


def test_registering_at_run_time_notifies_connected_clients(nvim: Neovim) -> None:
    nvim.api.current.buffer[:] = ["alpha", "beta", "alphabet"]
    with ts_client(nvim) as ts:
        assert "grep_at_run_time" not in {t["name"] for t in ts.send("list")["result"]["tools"]}
        nvim.api.exec_lua(GREP_AT_RUN_TIME, [])
        ts.wait_event(lambda e: e.get("method") == "notifications/tools/list_changed", what="list_changed")
        assert "grep_at_run_time" in {t["name"] for t in ts.send("list")["result"]["tools"]}
        reply = ts.send("call", name="grep_at_run_time", args={"pattern": "^alpha"})
        assert reply["result"]["structuredContent"] == {
            "matches": [{"line": 1, "text": "alpha"}, {"line": 3, "text": "alphabet"}],
            "bufnr": 0,
        }
        ts.clear_events()
        assert nvim.lua("return require('gemini_companion').unregister('grep_at_run_time')") is True
        ts.wait_event(lambda e: e.get("method") == "notifications/tools/list_changed", what="list_changed 2")
        assert "grep_at_run_time" not in {t["name"] for t in ts.send("list")["result"]["tools"]}
        gone = ts.send("call", name="grep_at_run_time", args={"pattern": "x"})
        assert gone["result"]["isError"] and "unknown tool" in tool_text(gone)


def test_tools_registered_before_start_appear(nvim: Neovim) -> None:
    # The shared Neovim registered grep_buffer in its init, before the server started.
    is_error, value = run_tool(nvim, "grep_buffer", {"pattern": "x"})
    assert not is_error and value == {"matches": [], "bufnr": 0}
    listed = nvim.lua("return vim.tbl_map(function(t) return t.name end, require('gemini_companion').list())")
    assert "grep_buffer" in listed and "read_buffer" in listed


def test_arguments_are_validated_before_lua_runs(nvim: Neovim) -> None:
    counted = (
        "local t = require('gemini_companion.tools').get('grep_buffer') _G.__grep = t.execute _G.__ran = 0"
    )
    counted += " t.execute = function(a) _G.__ran = _G.__ran + 1 return _G.__grep(a) end"
    nvim.api.exec_lua(counted, [])
    try:
        check_arguments_are_validated_before_lua_runs(nvim)
    finally:  # the shared Neovim's grep_buffer as it was
        nvim.api.exec_lua("require('gemini_companion.tools').get('grep_buffer').execute = _G.__grep", [])


def check_arguments_are_validated_before_lua_runs(nvim: Neovim) -> None:
    for args, expect in [
        ({}, "'pattern' is a required property"),
        ({"pattern": 5}, "at `pattern`: 5 is not of type 'string'"),
        ({"pattern": "a", "bufnr": "zero"}, "at `bufnr`"),
        ({"pattern": "a", "extra": 1}, "'extra' was unexpected"),
    ]:
        is_error, text = run_tool(nvim, "grep_buffer", args)
        assert is_error and expect in text, (args, text)
    assert nvim.lua("return _G.__ran") == 0
    is_error, value = run_tool(nvim, "grep_buffer", {"pattern": "x"})  # default bufnr = 0 applied
    assert not is_error and value["bufnr"] == 0
    assert nvim.lua("return _G.__ran") == 1


def test_names_are_checked_at_registration(nvim: Neovim) -> None:
    nvim.wait_state("running")
    for spec, expect in [
        ("{ name = 'read_buffer', execute = function() end }", "is a built-in tool"),
        ("{ name = 'openDiff', execute = function() end }", "companion server itself"),
        ("{ name = 'bad name!', execute = function() end }", "invalid tool name"),
        ("{ name = ('x'):rep(129), execute = function() end }", "invalid tool name"),
        ("{ name = 'no_execute' }", "needs an execute function"),
        ("{ name = 'bad_args', args = { a = { type = 'date' } }, execute = function() end }", "unknown type"),
        (
            "{ name = 'bad_schema', schema = { type = 'string' }, execute = function() end }",
            'type = "object"',
        ),
    ]:
        ok, err = nvim.lua(
            f"local ok, err = pcall(require('gemini_companion').register, {spec}) return {{ ok, err }}"
        )
        assert ok is False and expect in err, (spec, err)
    ok, err = nvim.lua("return { pcall(require('gemini_companion').unregister, 'read_buffer') }")
    assert ok is False and "built-in" in err


ASYNC_TOOLS = """
local mcp = require('gemini_companion')
mcp.register({ name = 'later', description = 'answers after 100 ms',
  args = { value = { type = 'string' } },
  execute = function(args, done) vim.defer_fn(function() done({ echoed = args.value }) end, 100) end })
mcp.register({ name = 'failing_later', execute = function(_, done)
  vim.defer_fn(function() done(nil, 'it went wrong') end, 50) end })
mcp.register({ name = 'never', timeout_ms = 300, execute = function(_, done, ctx)
  ctx.on_cancel(function(reason) _G.__never_cancelled = reason end)
  vim.defer_fn(function() done('too late') end, 1500) end })
mcp.register({ name = 'cancellable', execute = function(_, done, ctx)
  ctx.on_cancel(function(reason) _G.__cancel_reason = reason end)
  vim.defer_fn(function() _G.__late_done = true done('late') end, 1500) end })
mcp.register({ name = 'boom', execute = function() error('kaboom') end })
mcp.register({ name = 'returns_function', execute = function() return { f = function() end } end })
mcp.register({ name = 'returns_cycle', execute = function() local t = {} t.self = t return t end })
mcp.register({ name = 'returns_text', execute = function() return 'plain text' end })
mcp.register({ name = 'job_tool', execute = function(_, done)
  vim.system({ 'sh', '-c', 'echo from-a-job' }, { text = true },
    function(res) done(vim.trim(res.stdout)) end) end })
"""


GREP_AT_RUN_TIME = REGISTER_GREP.replace("grep_buffer", "grep_at_run_time")


@pytest.fixture(scope="module")
def module_nvim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neovim]:
    """The Neovim the tests share that only use the editor (tests/support/shared_nvim.py), with the
    tools they call registered before its server starts."""
    with shared_neovim(
        tmp_path_factory.mktemp("tools"), init_lua=REGISTER_GREP + EXAMPLE_TOOLS + ASYNC_TOOLS
    ) as nvim:
        yield nvim


@pytest.fixture
def nvim(module_nvim: Neovim) -> Neovim:
    return fresh_editor(module_nvim)


def test_sync_async_errors_timeouts_and_cancellation(nvim: Neovim) -> None:
    with ts_client(nvim) as ts:
        reply = ts.send("call", name="later", args={"value": "v"})
        assert reply["result"]["structuredContent"] == {"echoed": "v"}
        reply = ts.send("call", name="job_tool", args={})  # done() from a libuv callback
        assert tool_text(reply) == "from-a-job"
        reply = ts.send("call", name="returns_text", args={})
        assert tool_text(reply) == "plain text" and "structuredContent" not in reply["result"]
        for name, expect in [
            ("failing_later", "it went wrong"),
            ("boom", "kaboom"),
            ("returns_function", "cannot be sent as JSON"),
            ("returns_cycle", "cannot be sent as JSON"),
        ]:
            reply = ts.send("call", name=name, args={})
            assert reply["result"]["isError"] and expect in tool_text(reply), (name, reply)
        t0 = time.monotonic()
        reply = ts.send("call", name="never", args={})
        assert reply["result"]["isError"] and "did not answer within 0.3 s" in tool_text(reply)
        assert time.monotonic() - t0 < 1.2
        wait_for(lambda: nvim.lua("return _G.__never_cancelled") == "timeout", what="timeout reaches Lua")

        reply = ts.send("call_cancel", name="cancellable", args={}, after_ms=200)
        assert reply.get("cancelled") is True
        wait_for(lambda: nvim.lua("return _G.__cancel_reason") == "cancelled", what="cancel reaches Lua")
        wait_for(lambda: nvim.lua("return _G.__late_done") is True, 5, what="late done")
        # The late done() was ignored, and the client is still healthy. Python reads Lua's messages in
        # order, so whatever the late done() caused reached the client before this later answer.
        reply = ts.send("call", name="later", args={"value": "still fine"})
        assert reply["result"]["structuredContent"] == {"echoed": "still fine"}
        assert not [e for e in ts.events if e.get("event") == "error"], ts.events
        assert nvim.lua("return require('gemini_companion.tools').in_flight()") == 0


def test_unknown_tools_and_huge_arguments_are_clean_errors(nvim: Neovim) -> None:
    is_error, text = run_tool(nvim, "does_not_exist")
    assert is_error and "unknown tool" in text
    is_error, text = run_tool(nvim, "read_buffer", {"path": "x" * 2_000_000})
    assert is_error and "no such file" in text
    is_error, value = run_tool(nvim, "nvim_info")
    assert not is_error and value["pid"] > 0


def test_groups_can_be_disabled_and_a_prefix_added(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(
        init_lua=REGISTER_GREP
        + EXAMPLE_TOOLS
        + """
        require('gemini_companion').setup({
          tools = { prefix = 'nvim_', groups = { lsp = false } } })
    """
    )
    disc = nvim.wait_discovery()

    async def names() -> list[str]:
        async with mcp_client(disc.url, disc.token) as client:
            return [t.name for t in (await client.list_tools()).tools]

    listed = asyncio.run(names())
    assert (
        "nvim_read_buffer" in listed and "nvim_grep_buffer" in listed and "nvim_test_list_buffers" in listed
    )
    assert not [n for n in listed if "lsp_" in n]
    assert "openDiff" in listed and "read_buffer" not in listed
    is_error, value = run_tool(nvim, "nvim_test_list_buffers")
    assert not is_error and isinstance(value, list)
    assert not [n for n in nvim.notifications() if "invalid settings" in n[0]]


def test_async_tool_asks_the_user(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()

    async def scenario() -> Any:
        async with mcp_client(disc.url, disc.token) as client:
            pending = asyncio.ensure_future(
                client.call_tool("test_ask_user", {"prompt": "Pick", "choices": ["red", "green"]})
            )
            # The prompt is up once Neovim waits at it (vim.ui.select's inputlist(): command-line mode).
            await asyncio.to_thread(
                wait_for, lambda: nvim.api.request("nvim_get_mode")["mode"] == "c", what="the prompt"
            )
            await asyncio.to_thread(nvim.api.input, "2<CR>")  # the user answers the prompt
            return await pending

    result = asyncio.run(scenario())
    assert not result.is_error, result
    assert result.structured_content == {"choice": "green", "answered": True}


# -- built-in tools -----------------------------------------------------------------------


def test_buffers_list_and_read_with_ranges(nvim: Neovim) -> None:
    ws = nvim.workspace
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 2001)))
    (ws / "disk.txt").write_text("on disk\nonly\n")
    (ws / "blob.bin").write_bytes(b"abc\x00def")
    nvim.api.command("edit long.txt")
    nvim.api.current.buffer[0] = "changed, unsaved"
    is_error, listing = run_tool(nvim, "list_buffers")
    assert not is_error
    entry = next(b for b in listing["buffers"] if b["name"].endswith("long.txt"))
    assert entry["modified"] is True and entry["line_count"] == 2000 and entry["filetype"] == "text"
    assert entry["windows"] and entry["loaded"] is True

    _, read = run_tool(nvim, "read_buffer", {"path": "long.txt", "start_line": 1, "end_line": 3})
    assert read["text"] == "changed, unsaved\nline 2\nline 3" and read["source"] == "buffer"
    _, read = run_tool(nvim, "read_buffer", {"bufnr": 0, "start_line": 1999})
    assert read["text"] == "line 1999\nline 2000" and read["total_lines"] == 2000
    _, read = run_tool(nvim, "read_buffer", {"bufnr": 0, "max_bytes": 100})
    assert read["truncated"] is True and read["next_start_line"] == read["end_line"] + 1
    assert "[truncated: lines" in read["text"]
    _, read = run_tool(nvim, "read_buffer", {"path": str(ws / "disk.txt")})
    assert read["text"] == "on disk\nonly" and read["source"] == "disk"
    assert nvim.lua("return vim.fn.bufnr(...)", str(ws / "disk.txt")) == -1  # not opened by reading
    for args, expect in [
        ({"path": "missing.txt"}, "no such file"),
        ({"path": "blob.bin"}, "binary"),
        ({"bufnr": 999}, "no buffer 999"),
        ({"bufnr": 0, "start_line": 5000}, "past the end"),
    ]:
        is_error, text = run_tool(nvim, "read_buffer", args)
        assert is_error and expect in text, (args, text)


def test_editor_state_with_a_live_selection(nvim: Neovim) -> None:
    (nvim.workspace / "s.txt").write_text("héllo world\nsecond line\n")
    nvim.api.command("edit s.txt")
    nvim.api.input("0lvlll")  # select "éllo" (characters, not bytes)
    wait_for(lambda: nvim.api.request("nvim_get_mode")["mode"] == "v", what="visual mode")
    is_error, state = run_tool(nvim, "get_editor_state")
    assert not is_error
    assert state["file"].endswith("s.txt") and state["mode"] == "v"
    assert state["selection"]["text"] == "éllo" and state["selection"]["active"] is True
    assert state["selection"]["start"] == {"line": 1, "column": 2}
    assert state["selection"]["end"] == {"line": 1, "column": 5}
    assert state["cursor"] == {"line": 1, "column": 5}
    assert state["cwd"] == str(nvim.workspace)
    assert state["tabs"] == {"count": 1, "current": 1} and len(state["windows"]) == 1
    assert nvim.api.request("nvim_get_mode")["mode"] == "v"  # reading did not end the selection


def test_editor_context_is_the_users_file_even_from_the_agents_terminal(nvim: Neovim) -> None:
    """Issue 30: what Gemini CLI gets pushed, for an agent that can only pull it (agy has no IDE
    channel): the file last focused, its cursor and selection, the recent files; the agent's own
    terminal, where the user types to it, is not the file."""
    nvim.wait_state("running")
    (nvim.workspace / "a.txt").write_text("alpha\n")
    (nvim.workspace / "b.txt").write_text("one\ntwo three\n")
    nvim.api.command("edit a.txt")
    nvim.api.command("edit b.txt")
    nvim.api.input("2Gwviw")  # "three"
    wait_for(lambda: nvim.api.request("nvim_get_mode")["mode"] == "v", what="visual mode")
    nvim.api.input("<Esc>")
    nvim.api.command("botright split | terminal")  # where the user talks to the agent
    is_error, context = run_tool(nvim, "get_editor_context")
    assert not is_error, context
    assert context["active_file"] == {
        "path": str(nvim.workspace / "b.txt"),
        "cursor": {"line": 2, "column": 9},
        "selected_text": "three",
    }
    assert context["recent_files"] == [str(nvim.workspace / "b.txt"), str(nvim.workspace / "a.txt")]


def test_diagnostics_with_positions_severity_and_code(nvim: Neovim) -> None:
    (nvim.workspace / "d.py").write_text("x = 1\ny = ünknown\n")
    nvim.api.command("edit d.py")
    nvim.api.exec_lua(
        """
        local ns = vim.api.nvim_create_namespace('test')
        vim.diagnostic.set(ns, 0, {
          { lnum = 1, col = 5, end_lnum = 1, end_col = 13, severity = vim.diagnostic.severity.ERROR,
            message = 'undefined name', source = 'pyflakes', code = 'F821' },
          { lnum = 0, col = 0, severity = vim.diagnostic.severity.HINT, message = 'hint here' },
        })
    """,
        [],
    )
    _, everything = run_tool(nvim, "get_diagnostics")
    assert everything["count"] == 2
    first = everything["diagnostics"][0]
    assert first["line"] == 1 and first["severity"] == "hint"
    _, errors = run_tool(nvim, "get_diagnostics", {"bufnr": 0, "severity": "error"})
    assert errors["diagnostics"] == [
        {
            "path": str(nvim.workspace / "d.py"),
            "bufnr": nvim.api.current.buffer.number,
            "line": 2,
            "column": 5,
            "end_line": 2,
            "end_column": 12,
            "severity": "error",
            "message": "undefined name",
            "source": "pyflakes",
            "code": "F821",
        }
    ]
    is_error, text = run_tool(nvim, "get_diagnostics", {"severity": "fatal"})
    assert is_error and "severity" in text


def test_undo_tree_with_branches_and_text_at_a_state_leaves_the_buffer_alone(nvim: Neovim) -> None:
    buf = nvim.api.current.buffer
    nvim.api.command("setlocal undolevels=100")
    for text in ("one", "two", "three"):
        nvim.api.command("let &undolevels = &undolevels")  # close the undo block
        buf[:] = [text]
    nvim.api.command("undo")  # back to "two"
    nvim.api.command("let &undolevels = &undolevels")
    buf[:] = ["branch"]  # a new branch: "three" is now an alternative
    nvim.api.command("undo")
    before = (
        buf[:],
        nvim.api.current.window.cursor,
        nvim.lua("return vim.fn.undotree().seq_cur"),
        nvim.lua("return vim.bo.modified"),
    )
    _, tree = run_tool(nvim, "undo_tree", {"bufnr": 0})
    assert tree["seq_last"] == 4 and tree["seq_current"] == 2
    seqs = [e["seq"] for e in tree["entries"]]
    assert 4 in seqs and any(e.get("branches") for e in tree["entries"])
    for seq, text in [(0, ""), (1, "one"), (2, "two"), (3, "three"), (4, "branch")]:
        is_error, state = run_tool(nvim, "undo_text_at", {"bufnr": 0, "seq": seq})
        assert not is_error and state["text"] == text, (seq, state)
    is_error, text = run_tool(nvim, "undo_text_at", {"bufnr": 0, "seq": 99})
    assert is_error and "no undo state 99" in text
    after = (
        buf[:],
        nvim.api.current.window.cursor,
        nvim.lua("return vim.fn.undotree().seq_cur"),
        nvim.lua("return vim.bo.modified"),
    )
    assert after == before
    assert len(nvim.api.buffers) == 1  # no scratch buffer left behind


# -- LSP, with a real language server (python-lsp-server) -----------------------------------

PYLSP_INIT = f"""
vim.api.nvim_create_autocmd('FileType', {{ pattern = 'python', callback = function(ev)
  vim.lsp.start({{ name = 'pylsp', cmd = {{ '{ROOT / ".venv" / "bin" / "pylsp"}' }},
                  root_dir = vim.fn.getcwd() }}, {{ bufnr = ev.buf }})
end }})
"""

MOD = '''\
class Greeter:
    """Says hello."""

    def greet(self, name: str) -> str:
        """Return a greeting for name."""
        return "hello " + name


def make() -> Greeter:
    return Greeter()
'''

MAIN = """\
from mod import Greeter, make

g = make()
print(g.greet("x"))
other = Greeter()
"""


@pytest.fixture
def lsp_nvim(make_nvim) -> Neovim:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=PYLSP_INIT)
    (nvim.workspace / "mod.py").write_text(MOD)
    (nvim.workspace / "main.py").write_text(MAIN)
    nvim.wait_state("running")
    nvim.api.command("edit main.py")
    wait_for(lambda: nvim.lua("return #vim.lsp.get_clients({ bufnr = 0 })") == 1, 30, what="pylsp attached")
    return nvim


def test_lsp_tools_against_a_real_language_server(lsp_nvim: Neovim) -> None:
    nvim = lsp_nvim
    main, mod = str(nvim.workspace / "main.py"), str(nvim.workspace / "mod.py")
    # Hover on `greet` in main.py line 4: print(g.greet("x"))
    is_error, hover = run_tool(nvim, "lsp_hover", {"path": main, "line": 4, "column": 9})
    assert not is_error and "Return a greeting for name" in hover["text"], hover
    _, definition = run_tool(nvim, "lsp_definition", {"path": main, "line": 3, "column": 5})
    assert definition["count"] == 1
    assert definition["locations"][0]["path"] == mod and definition["locations"][0]["line"] == 9
    # References of Greeter, asked in mod.py (not open yet: the tool opens it in a hidden buffer)
    _, refs = run_tool(nvim, "lsp_references", {"path": mod, "line": 1, "column": 7})
    assert refs["count"] >= 4, refs  # class, return annotation, constructor call, the import, the use
    assert {Path(r["path"]).name for r in refs["locations"]} == {"mod.py", "main.py"}
    _, symbols = run_tool(nvim, "lsp_document_symbols", {"path": mod})
    names = {(s["name"], s["kind"]) for s in symbols["symbols"]}
    assert ("Greeter", "Class") in names and ("make", "Function") in names
    assert any(s["name"] == "greet" for s in symbols["symbols"])
    _, ws_symbols = run_tool(nvim, "lsp_workspace_symbols", {"query": "Greeter", "path": main})
    # pylsp has no workspace/symbol: the tool says so in words instead of failing
    assert ws_symbols.get("note") == "no attached language server supports workspace/symbol" or any(
        s["name"] == "Greeter" for s in ws_symbols["symbols"]
    )
    _, actions = run_tool(nvim, "lsp_code_actions", {"path": main, "line": 1, "column": 1})
    assert "actions" in actions
    is_error, text = run_tool(nvim, "lsp_hover", {"path": main, "line": 50, "column": 1})
    assert is_error and "line 50 is past the end of the file (5 lines)" in text


def test_lsp_tools_without_a_server_say_so(nvim: Neovim) -> None:
    (nvim.workspace / "plain.txt").write_text("nothing\n")
    nvim.api.command("edit plain.txt")
    is_error, value = run_tool(nvim, "lsp_hover", {"bufnr": 0, "line": 1, "column": 1})
    assert not is_error and "no LSP client attached" in value["note"]


def test_files_loaded_for_lsp_tools_are_bounded_and_user_work_is_kept(nvim: Neovim) -> None:
    paths = {}
    for name in "abcd":
        paths[name] = nvim.workspace / f"{name}.txt"
        paths[name].write_text(f"{name}\n")
    limit = "require('gemini_companion.builtin.util').MAX_LOADED"
    kept_limit = nvim.lua(f"return {limit}")
    nvim.lua(f"{limit} = 2")
    try:
        check_files_loaded_are_bounded(nvim, paths)
    finally:  # the shared Neovim's limit as it was
        nvim.lua(f"{limit} = ...", kept_limit)


def check_files_loaded_are_bounded(nvim: Neovim, paths: dict[str, Path]) -> None:
    def symbols(name: str) -> tuple[bool, Any]:
        return run_tool(nvim, "lsp_document_symbols", {"path": str(paths[name])})

    def bufnr(name: str) -> int:
        return int(nvim.lua("return vim.fn.bufnr(...)", str(paths[name])))

    assert symbols("a") == (False, {"result": None, "note": f"no LSP client attached to {paths['a']}"})
    edit = 'vim.api.nvim_buf_set_lines(..., 0, -1, false, { "the user\'s unsaved edit" })'
    nvim.lua(edit, bufnr("a"))  # now in use
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(symbols, "bcd"))
    for is_error, value in answers:  # an older one may be wiped while it waited for a server
        assert ("was closed before a language server attached" in value) if is_error else value["note"], value
    kept = [name for name in "bcd" if bufnr(name) != -1]
    assert len(kept) == 1, kept  # the limit counts the modified buffer, which stays
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufnr("a")) == [
        "the user's unsaved edit"
    ]
    assert nvim.lua(f"return vim.bo[{bufnr('a')}].modified") is True


def test_mcp_config_snippets_are_valid_and_keep_the_token_out_unless_asked(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim()  # its own: it stops the server
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    render = "return require('gemini_companion.mcp_config').render(...)"
    for literal in (False, True):
        gemini = json.loads(nvim.lua(render, "gemini", literal))["mcpServers"]["nvim"]
        opencode = json.loads(nvim.lua(render, "opencode", literal))["mcp"]["nvim"]
        plain = json.loads(nvim.lua(render, "json", literal))
        claude = nvim.lua(render, "claude", literal)
        assert opencode["type"] == "remote" and opencode["oauth"] is False
        texts = json.dumps([gemini, opencode, plain]) + claude
        if literal:
            assert gemini["httpUrl"] == disc.url == opencode["url"] == plain["url"]
            assert gemini["headers"]["Authorization"] == f"Bearer {disc.token}"
            assert claude.startswith("claude mcp add --transport http nvim ")
            assert disc.url in claude and disc.token in claude
        else:
            assert disc.token not in texts
            assert gemini["httpUrl"] == "http://127.0.0.1:${GEMINI_CLI_IDE_SERVER_PORT}/mcp"
            # a .mcp.json: Claude Code expands ${VAR} at each start (`claude mcp add` would keep values)
            auth = json.loads(claude)["mcpServers"]["nvim"]["headers"]["Authorization"]
            assert auth == "Bearer ${GEMINI_CLI_IDE_AUTH_TOKEN}"
    nvim.api.command("GeminiMcpConfig claude")
    assert json.loads(nvim.api.funcs.getreg('"'))["mcpServers"]["nvim"]["type"] == "http"
    assert disc.token not in nvim.notifications()[-1][0]
    nvim.api.command("GeminiStop")
    nvim.wait_state("stopped")
    assert nvim.lua(render, "gemini", False) is None


def test_regressions_found_by_fuzzing(nvim: Neovim) -> None:
    # G: a FIFO (or device, or directory) is never loaded: bufload() on a FIFO froze Neovim
    fifo = nvim.workspace / "pipe"
    os.mkfifo(fifo)
    is_error, text = run_tool(nvim, "lsp_hover", {"path": str(fifo), "line": 1, "column": 1})
    assert is_error and "not a regular file (fifo)" in text
    is_error, text = run_tool(nvim, "lsp_document_symbols", {"path": str(nvim.workspace)})
    assert is_error and "not a regular file (directory)" in text
    assert nvim.lua("return 1") == 1
    # H: a server tool's schema is enforced too
    is_error, text = run_tool(nvim, "companion_status", {"unexpected": 1})
    assert is_error and "'unexpected' was unexpected" in text
    # I: a huge argument does not come back whole in the error
    is_error, text = run_tool(nvim, "read_buffer", {"bufnr": "x" * 1_000_000})
    assert is_error and len(text) < 600 and "characters)" in text
    # K: a buffer number beyond a C int is refused by the schema, not wrapped into nonsense
    for tool, extra in [("read_buffer", {}), ("undo_tree", {}), ("lsp_hover", {"line": 1, "column": 1})]:
        is_error, text = run_tool(nvim, tool, {"bufnr": 2**40, **extra})
        assert is_error and "at `bufnr`" in text and "is greater than the maximum" in text, (tool, text)
    is_error, text = run_tool(nvim, "read_buffer", {"bufnr": 999_999})
    assert is_error and "no buffer 999999" in text
