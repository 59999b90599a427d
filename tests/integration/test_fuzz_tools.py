"""Hostile tool arguments (issue 9, item 2) and nothing lost (item 7), against one Neovim.

For every tool the server lists (the built-ins plus Lua tools registered here through
`require('gemini_companion').register`), arguments are generated from its own inputSchema and
from outside it (wrong types, extra keys, missing required ones, huge values, non-objects).
Every call must give a result or a clean `isError` (no protocol error, no hang, no Lua or
Python traceback). For read-only tools (annotations.readOnlyHint) Neovim's state is compared
before and after each call: buffers (list, text, modified, changedtick), windows and cursors,
tabs, registers, undo state, mode, cwd, Visual marks. openDiff/closeDiff are fuzzed for clean
answers, and each view is closed again.

(What the server alone does with arguments, non-objects, the native tools' own checks, short
errors: tests/protocol/test_tool_arguments.py.)

Throughout, the user holds a modified, unsaved buffer; at the end it must be unchanged and still
modified, and no file in the workspace may have been written.

Sizes: FUZZ_EXAMPLES (tests/support/fuzz_support.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz_support import (
    CORPUS,
    LoopThread,
    SdkClient,
    Tally,
    assert_healthy,
    budget,
    editor_state,
    fuzz_settings,
    fuzz_timeout,
    json_strategies,
    module_nvim,
    settings_for,
    state_diff,
    tree_digest,
)
from tests.support.helpers import Discovery, Neovim, record_figure, wait_for

pytestmark = pytest.mark.fuzz

FUZZ_TOOLS = r"""
local mcp = require('gemini_companion')
mcp.register({
  name = 'fuzz_echo',
  description = 'Echoes its arguments (every JSON type)',
  read_only = true,
  args = {
    text = { type = 'string', required = true },
    count = { type = 'integer', default = 1 },
    ratio = { type = 'number' },
    flag = { type = 'boolean' },
    items = { type = 'array', items = { type = 'string' } },
    opts = { type = 'object' },
    mode = { type = 'string', enum = { 'a', 'b', 'c' } },
  },
  execute = function(args)
    return { args = args, keys = vim.tbl_count(args) }
  end,
})
mcp.register({
  name = 'fuzz.schema-async',
  description = 'A full JSON Schema with constraints; answers asynchronously',
  read_only = true,
  schema = {
    type = 'object',
    properties = {
      nested = {
        type = 'object',
        properties = {
          depth = { type = 'integer', minimum = 0, maximum = 10 },
          tags = { type = 'array', items = { type = 'string', maxLength = 20 }, maxItems = 5 },
        },
        required = { 'depth' },
      },
      word = { type = 'string', pattern = '^[a-z]+$' },
    },
    required = { 'nested' },
    additionalProperties = false,
  },
  execute = function(args, done)
    vim.defer_fn(function()
      done({ depth = args.nested.depth, word = args.word or vim.NIL })
    end, 1)
  end,
})
return vim.tbl_map(function(t) return t.name end, mcp.list())
"""

WORKSPACE_FILES: dict[str, bytes] = {
    "notes.txt": b"original line 1\noriginal line 2\n",  # the user's held buffer
    "code.py": b"def f(x):\n    return x + 1\n\n\nclass C:\n    pass\n",
    "unicode.txt": "ünïcödé ✓ 😀 漢字\nsecond\n".encode(),
    "crlf.txt": b"one\r\ntwo\r\n",
    "empty.txt": b"",
    "data.json": b'{"a": [1, 2, 3]}\n',  # never opened: LSP tools load it hidden
    "big.txt": b"".join(b"line %d " % i + b"x" * 80 + b"\n" for i in range(3000)),
    "binary.bin": bytes(range(256)) * 4,
    "sub/dir/deep.txt": b"deep\n",
}
HELD_LINES = ["held line 1 (changed)", "held line 2 with ünïcödé", "held line 3", "appended, never saved"]


@dataclass
class Editor:
    nvim: Neovim
    disc: Discovery
    loop: LoopThread
    client: SdkClient
    workspace: Path
    special: Path
    held_buf: int = 0
    held_path: str = ""
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    read_only: set[str] = field(default_factory=set)
    bufnrs: list[int] = field(default_factory=list)
    disk: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    tally: Tally = field(default_factory=Tally)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


def _prepare(nvim: Neovim) -> int:
    """The user's session: a modified, unsaved buffer with undo history (current), a split, a
    second tab, registers, a last Visual selection."""
    api = nvim.api
    api.command("edit notes.txt")
    held = api.current.buffer
    held[:] = HELD_LINES[:3]
    held.append(HELD_LINES[3])
    held[0] = HELD_LINES[0]
    api.command("vsplit code.py")
    api.command("tabnew unicode.txt")
    api.command("tabnext 1")
    api.command("wincmd p")
    assert api.current.buffer.number == held.number
    scratch = api.call("nvim_create_buf", True, False)
    api.call("nvim_buf_set_lines", scratch, 0, -1, False, ["an unnamed, unsaved buffer"])
    api.command("normal! ggvj$")
    api.feedkeys("\x1b", "nx", False)  # leave Visual mode: '< and '> are set
    api.current.window.cursor = (2, 3)
    api.call("setreg", "a", "alpha")
    api.call("setreg", "b", ["l1", "l2"], "l")
    api.call("setreg", "/", "held")
    number: int = held.number
    return number


@pytest.fixture(scope="module")
def editor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Editor]:
    base = tmp_path_factory.mktemp("fuzz_tools")
    workspace = base / "workspace"
    for rel, data in WORKSPACE_FILES.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_bytes(data)
    special = base / "special"  # outside the workspace: a FIFO, a directory
    special.mkdir()
    os.mkfifo(special / "fifo")
    with module_nvim(base) as (nvim, disc):
        held = _prepare(nvim)
        names = nvim.lua(FUZZ_TOOLS)
        assert "fuzz_echo" in names and "fuzz.schema-async" in names
        loop = LoopThread()
        client = SdkClient(loop, disc.url, disc.token)
        ed = Editor(nvim, disc, loop, client, workspace, special, held_buf=held)
        ed.held_path = str(workspace / "notes.txt")

        def listed() -> bool:
            tools = client.run(lambda c: c.list_tools()).tools
            ed.tools = {t.name: t.input_schema for t in tools}
            ed.read_only = {t.name for t in tools if t.annotations and t.annotations.read_only_hint}
            return "fuzz.schema-async" in ed.tools

        wait_for(listed, 10, what="the registered tools listed")
        ed.bufnrs = nvim.lua("return vim.api.nvim_list_bufs()")
        ed.disk = tree_digest(workspace)
        try:
            yield ed
        finally:
            client.close()
            loop.close()
            # What the module's tests covered: figures for `make stress` (bench/reliability.py).
            ed.tally.record()
            record_figure(
                "coverage.fuzz_tools",
                calls=ed.calls,
                errors=ed.errors,
                hidden_buffers_loaded_by_lsp_tools=sorted(ed.hidden),
            )


# -- arguments from a schema --------------------------------------------------------------

_, json_values = json_strategies(int_bound=2**40, text_size=20, width=3, key_size=6, max_leaves=8)


def _paths(ed: Editor) -> st.SearchStrategy[str]:
    ws = ed.workspace
    return st.sampled_from(
        [
            ed.held_path,
            str(ws / "code.py"),
            "code.py",
            "./unicode.txt",
            str(ws / "crlf.txt"),
            str(ws / "empty.txt"),
            str(ws / "big.txt"),
            str(ws / "binary.bin"),
            str(ws / "data.json"),  # not open: loaded hidden by LSP tools
            str(ws / "no-such-file.txt"),
            str(ws / "sub" / "no" / "such.txt"),
            "../" * 20 + "etc/hostname",
            "/nonexistent/" + "x" * 300,
            "x" * 5000,
            "~/",
            "\\\\?\\C:\\windows",
            "file:///etc/hostname",
            "a\nb",
            "😀/☃",
            "%s%n%x",
            "$HOME/x",
            "*",
        ]
    )


def _hint(ed: Editor, name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any] | None:
    """Values worth more than random ones for the built-in tools' arguments."""
    small = st.integers(-3, 40)
    if name in ("path", "filePath") and prop.get("type") == "string":
        return _paths(ed)
    if name == "bufnr":
        return st.sampled_from([0, *ed.bufnrs, -1, 9999, 2**31])
    if name in ("line", "column", "end_line", "end_column", "start_line", "seq"):
        return small | st.sampled_from([2**31, 2**53, -(2**31)])
    if name == "max_bytes":
        return st.sampled_from([-1, 0, 1, 10, 100, 100_000, 2**40])
    return None


def value_for(ed: Editor, schema: dict[str, Any], name: str = "") -> st.SearchStrategy[Any]:
    base = _schema_value(ed, schema)
    hint = _hint(ed, name, schema)
    return base if hint is None else st.one_of(hint, hint, base)


def _schema_value(ed: Editor, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: len(s) < 200)
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.integers(-(2**40), 2**40) | st.floats(
            schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = schema.get("items")
        element = _schema_value(ed, items) if isinstance(items, dict) else json_values
        return st.lists(element, max_size=min(schema.get("maxItems", 4), 4))
    if kind == "object":
        if schema.get("properties"):
            return object_for(ed, schema)
        return st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    return json_values


def object_for(ed: Editor, schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    return st.fixed_dictionaries(
        {k: value_for(ed, v, k) for k, v in props.items() if k in required},
        optional={k: value_for(ed, v, k) for k, v in props.items() if k not in required},
    )


WRONG = {
    "string": [5, 1.5, True, None, [], {}, ["a"]],
    "integer": ["1", 1.5, True, None, [], {}, 1e308, "NaN"],
    "number": ["1.5", True, None, [], {}],
    "boolean": [0, 1, "true", None, [], {}],
    "array": ["a", 1, {}, None, True, {"0": "a"}],
    "object": ["{}", 1, [], None, True, [[1, 2]]],
}
HUGE = [
    "h" * 1_000_000,
    "\u0000" * 1000,
    "\ud7ff\ue000\uffff" * 1000,
    2**64,
    -(2**63) - 1,
    2**1000,
    1e308,
    -1e308,
    5e-324,
    [[[[[[[[[[[]]]]]]]]]]],
    json.loads("[" * 100 + "]" * 100),
    {f"k{i}": i for i in range(2000)},
    list(range(20_000)),
]


@st.composite
def outside(draw: st.DrawFn, ed: Editor, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments made invalid (or at least hostile): wrong types, extra keys, missing required
    ones, null, huge values."""
    args = dict(draw(object_for(ed, schema)))
    props: dict[str, Any] = schema.get("properties") or {}
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["wrong-type", "extra-key", "drop-required", "null", "huge"]))
        if how == "wrong-type" and props:
            key = draw(st.sampled_from(sorted(props)))
            args[key] = draw(st.sampled_from(WRONG.get(props[key].get("type", "string"), WRONG["string"])))
        elif how == "extra-key":
            key = draw(
                st.text(max_size=12) | st.sampled_from(["__proto__", "constructor", "", "bufnr ", "0"])
            )
            args[key] = draw(json_values)
        elif how == "drop-required" and schema.get("required"):
            args.pop(draw(st.sampled_from(sorted(schema["required"]))), None)
        elif how == "null" and props:
            args[draw(st.sampled_from(sorted(props)))] = None
        elif how == "huge":
            key = draw(st.sampled_from(sorted(props)) if props else st.just("huge"))
            args[key] = draw(st.sampled_from(HUGE))
    return args


# -- one call, checked --------------------------------------------------------------------

_LUA_RUNTIME_ERROR = re.compile(
    r"\.lua:\d+:|stack traceback|attempt to (index|call|compare|perform|concatenate)"
)
_PY_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")
SKIP_STATE = {"openDiff", "closeDiff"}


def _allowed_change(ed: Editor, tool: str, args: dict[str, Any], diff: dict[str, Any]) -> bool:
    """The documented side effect of a read-only tool: an LSP tool given the path of a regular
    file that is not open loads it into a hidden, unlisted, unmodified buffer, shown nowhere.
    (Until 50ab291 directories were loaded too, running netrw: bug G.)"""
    if not tool.startswith("lsp_") or not isinstance(args.get("path"), str):
        return False
    for key, (old, new) in diff.items():
        if not key.startswith("buffer ") or old is not None or new is None:
            return False
        if new["listed"] or new["modified"] or new["buftype"] != "" or not os.path.isfile(new["name"]):
            return False
        ed.hidden.add(new["name"])
    return True


def call_checked(ed: Editor, tool: str, args: dict[str, Any], *, expect_valid: bool | None) -> None:
    schema = ed.tools[tool]
    locally_valid = jsonschema.Draft202012Validator(schema).is_valid(args)
    check_state = tool in ed.read_only and tool not in SKIP_STATE
    before = editor_state(ed.nvim) if check_state else None
    t0 = time.monotonic()
    result = ed.client.run(lambda c: c.call_tool(tool, args, read_timeout_seconds=20), timeout=30)
    elapsed = time.monotonic() - t0
    ed.count(ed.calls, tool)
    what = (tool, _short(args))
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    assert elapsed < 12, (what, f"{elapsed:.1f} s")
    if result.is_error:
        ed.count(ed.errors, tool)
        assert text.strip(), (what, "an error without a reason")
        assert len(text) < 4000, (what, text[:500])
        assert not _LUA_RUNTIME_ERROR.search(text), (what, "an internal Lua error, not a clean one", text)
        assert not _PY_TRACEBACK.search(text), (what, text)
    if tool not in SKIP_STATE:  # every tool checks its arguments against its own schema
        if locally_valid:
            assert not (result.is_error and text.startswith("invalid arguments")), (what, text)
        else:
            assert result.is_error and text.startswith(f"invalid arguments for {tool!r}"), (what, text[:300])
    if expect_valid is not None:
        assert locally_valid == expect_valid or not expect_valid, what
    if before is not None:
        after = editor_state(ed.nvim)
        diff = state_diff(before, after)
        assert not diff or _allowed_change(ed, tool, args, diff), (
            what,
            "a read-only tool changed Neovim",
            diff,
        )


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) < 300 else text[:300] + f"... ({len(text)} chars)"


def _fuzz_one(
    ed: Editor, tool: str, n: int, args: st.SearchStrategy[dict[str, Any]], expect_valid: bool | None
) -> None:
    category = "tools_in_schema" if expect_valid is None else "tools_outside_schema"

    @settings_for(n)
    @given(args=args)
    def run(args: dict[str, Any]) -> None:
        with ed.tally.counting(category):
            call_checked(ed, tool, args, expect_valid=expect_valid)

    run()


def _per_tool(ed: Editor, share: float, tools: list[str]) -> int:
    return max(2, math.ceil(budget(share) / max(1, len(tools))))


def _fuzzable(ed: Editor) -> list[str]:
    return sorted(t for t in ed.tools if t not in SKIP_STATE)


IN_SHARE = 0.22
OUT_SHARE = 0.18
DIFF_SHARE = 0.12


@fuzz_timeout(IN_SHARE, per_example_s=1.0)
def test_arguments_from_each_schema(editor: Editor) -> None:
    tools = _fuzzable(editor)
    n = _per_tool(editor, IN_SHARE, tools)
    for tool in tools:
        _fuzz_one(editor, tool, n, object_for(editor, editor.tools[tool]), expect_valid=None)
    assert set(tools) <= set(editor.calls), f"tools never called: {set(tools) - set(editor.calls)}"


@fuzz_timeout(OUT_SHARE, per_example_s=1.0)
def test_arguments_outside_each_schema(editor: Editor) -> None:
    tools = _fuzzable(editor)
    n = _per_tool(editor, OUT_SHARE, tools)
    for tool in tools:
        _fuzz_one(editor, tool, n, outside(editor, editor.tools[tool]), expect_valid=False)


def test_read_only_tools_keep_a_live_visual_selection(editor: Editor) -> None:
    """The user is selecting text while an agent calls every read-only tool (its minimal valid
    arguments): the selection stays live and nothing else changes."""
    nvim = editor.nvim
    nvim.api.feedkeys("gvo", "nx", False)  # the last selection again, live, cursor at its start
    minimal = {"line": 1, "column": 1, "seq": 0, "query": "f", "text": "t", "nested": {"depth": 0}}
    try:
        assert nvim.api.call("mode") == "v"
        for tool in sorted(editor.read_only):
            schema = editor.tools[tool]
            args = {k: minimal[k] for k in schema.get("required", [])}
            call_checked(editor, tool, args, expect_valid=True)
            assert nvim.api.call("mode") == "v", tool
    finally:
        nvim.api.feedkeys("\x1bgvo\x1b", "nx", False)  # leave it as it was (cursor included)
        nvim.api.current.window.cursor = (2, 3)


def test_lua_tool_arguments_round_trip(editor: Editor) -> None:
    """What the echo tool gets is what was sent (after defaults), for every JSON type."""
    cases = [
        {"text": "x"},
        {"text": "ünïcödé ✓ 😀", "count": -(2**53), "ratio": 0.1, "flag": False, "mode": "c"},
        {"text": "", "items": [], "opts": {"a": [1, {"b": None}], "": "empty key"}},
        {"text": "\u0000\u001f\u007f", "items": ["a", ""], "ratio": 1e300},
        {"text": "h" * 200_000},
    ]
    for args in cases:
        result = editor.client.run(lambda c, a=args: c.call_tool("fuzz_echo", a))  # type: ignore[misc]
        assert not result.is_error, result.content[0].text[:300]
        got = result.structured_content["args"]
        want = {"count": 1, **args}
        assert _lenient(got) == _lenient(want), (args, got)


def _lenient(value: Any) -> Any:
    """Lua has one empty table for [] and {}, and one number type."""
    if isinstance(value, dict):
        return {k: _lenient(v) for k, v in value.items()} or "<empty>"
    if isinstance(value, list):
        return [_lenient(v) for v in value] or "<empty>"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


TOOL_CORPUS: list[dict[str, Any]] = json.loads((CORPUS / "tools.json").read_text(encoding="utf-8"))


def _expand(value: Any, ed: Editor) -> Any:
    if isinstance(value, str):
        return (
            value.replace("{{WORKSPACE}}", str(ed.workspace))
            .replace("{{HELD}}", ed.held_path)
            .replace("{{SPECIAL}}", str(ed.special))
        )
    if isinstance(value, dict):
        if set(value) == {"repeat"}:
            return value["repeat"][0] * value["repeat"][1]
        return {_expand(k, ed): _expand(v, ed) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, ed) for v in value]
    return value


@pytest.mark.parametrize("case", TOOL_CORPUS, ids=[f"{i}-{c['tool']}" for i, c in enumerate(TOOL_CORPUS)])
def test_tool_corpus_is_answered_cleanly(editor: Editor, case: dict[str, Any]) -> None:
    with editor.tally.counting("tools_corpus"):
        _replay(editor, case)


def _replay(editor: Editor, case: dict[str, Any]) -> None:
    tool, args = case["tool"], _expand(case["args"], editor)
    if tool in SKIP_STATE:
        before = _layout(editor_state(editor.nvim))
        result = editor.client.run(lambda c: c.call_tool(tool, args, read_timeout_seconds=20), timeout=30)
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error or (
            text and not _PY_TRACEBACK.search(text) and not _LUA_RUNTIME_ERROR.search(text)
        )
        if isinstance(args.get("filePath"), str):
            editor.client.run(lambda c: c.call_tool("closeDiff", {"filePath": args["filePath"]}), timeout=30)
        assert _layout(editor_state(editor.nvim)) == before
        assert _held(editor) == (HELD_LINES, True)
        return
    assert tool in editor.tools, f"{tool} is not listed"
    call_checked(editor, tool, args, expect_valid=None)


# -- openDiff / closeDiff -----------------------------------------------------------------


def _diff_paths(ed: Editor) -> st.SearchStrategy[str]:
    ws = ed.workspace
    return st.sampled_from(
        [
            ed.held_path,  # the user's modified buffer's file
            str(ws / "code.py"),  # open, unmodified
            str(ws / "crlf.txt"),
            str(ws / "data.json"),  # not open
            str(ws / "new-file.txt"),  # does not exist yet
            str(ws / "sub" / "dir" / "new ünïcödé ✓.txt"),
            str(ws / "no-dir" / "x.txt"),  # parent missing
            str(ws),  # a directory
            str(ed.special / "fifo"),  # not a regular file
            "relative.txt",
            "",
            str(ws / ("n" * 300)),  # name too long
            str(ws / "a\nb.txt"),
            str(ws / "tab\tand space .txt"),
        ]
    ) | st.text(max_size=30).map(lambda s: str(ws / s.replace("/", "_").replace("\x00", "")) if s else s)


_contents = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            "",
            "\n",
            "one\r\ntwo\r\n",
            "mixed\r\nline\nends\r",
            "no newline at end",
            "x" * 300_000,
            "\n" * 5000,
            "with a NUL \u0000 byte",
            "ünïcödé ✓ 😀\n",
            "\ufeffBOM first\n",
        ]
    ),
)


@st.composite
def diff_args(draw: st.DrawFn, ed: Editor) -> dict[str, Any]:
    args: dict[str, Any] = {"filePath": draw(_diff_paths(ed)), "newContent": draw(_contents)}
    how = draw(st.sampled_from(["ok"] * 6 + ["wrong-type", "missing", "extra"]))
    if how == "wrong-type":
        args[draw(st.sampled_from(["filePath", "newContent"]))] = draw(st.sampled_from(WRONG["string"]))
    elif how == "missing":
        args.pop(draw(st.sampled_from(["filePath", "newContent"])))
    elif how == "extra":
        args[draw(st.text(max_size=8))] = draw(json_values)
    return args


def _layout(state: dict[str, Any]) -> dict[str, Any]:
    """What the user sees: tabs, windows, cursors, the current window, listed buffers."""
    return {
        "windows": state["windows"],
        "current": {k: v for k, v in state["current"].items() if k != "alternate"},
        "listed": sorted(
            (b["bufnr"], b["name"], b["text"], b["modified"]) for b in state["buffers"] if b["listed"]
        ),
        "mode": state["mode"],
        "registers": state["registers"],
    }


def _held(ed: Editor) -> tuple[list[str], bool]:
    lines, modified = ed.nvim.lua(
        "local b = ... return { vim.api.nvim_buf_get_lines(b, 0, -1, false), vim.bo[b].modified }",
        ed.held_buf,
    )
    return lines, modified


@fuzz_timeout(DIFF_SHARE, per_example_s=1.0)
def test_open_and_close_diff_with_hostile_arguments(editor: Editor) -> None:
    baseline = _layout(editor_state(editor.nvim))

    @fuzz_settings(DIFF_SHARE)
    @given(args=diff_args(editor))
    def run(args: dict[str, Any]) -> None:
        with editor.tally.counting("tools_diff"):
            check(args)

    def check(args: dict[str, Any]) -> None:
        path = args.get("filePath")
        # A review keeps the file's own line ends (docs: an agent's tool may send LF for a CRLF file,
        # or CRLF for an LF one): a proposal comes back with the file's line ends.
        on_disk = Path(path).read_bytes() if isinstance(path, str) and os.path.isfile(path) else b""
        lf_file = b"\n" in on_disk and b"\r\n" not in on_disk
        crlf_file = b"\r\n" in on_disk and on_disk.count(b"\n") == on_disk.count(b"\r\n")
        opened = editor.client.run(
            lambda c: c.call_tool("openDiff", args, read_timeout_seconds=20), timeout=30
        )
        text = "\n".join(getattr(c, "text", "") for c in opened.content)
        editor.count(editor.calls, "openDiff")
        if opened.is_error:
            editor.count(editor.errors, "openDiff")
            assert text and not _PY_TRACEBACK.search(text) and not _LUA_RUNTIME_ERROR.search(text), (
                args,
                text,
            )
        if isinstance(path, str):
            closed = editor.client.run(lambda c: c.call_tool("closeDiff", {"filePath": path}), timeout=30)
            editor.count(editor.calls, "closeDiff")
            assert not closed.is_error, closed.content[0].text
            body = json.loads(closed.content[0].text)
            if not opened.is_error:
                content = args["newContent"]
                texts = {content}
                if lf_file:
                    texts.add(content.replace("\r\n", "\n"))
                if crlf_file:
                    texts.add(content.replace("\r\n", "\n").replace("\n", "\r\n"))
                expected = tuple(t + end for t in texts for end in ("", "\n", "\r\n"))
                assert body.get("content") in expected, (args, body)
            else:
                assert body == {}, (args, body)
        # The view is gone, everything the user had is back as it was.
        assert _layout(editor_state(editor.nvim)) == baseline, args
        assert _held(editor) == (HELD_LINES, True)

    run()


def test_close_diff_for_what_is_not_open(editor: Editor) -> None:
    for args in [
        {"filePath": editor.held_path},
        {"filePath": ""},
        {"filePath": "x" * 100_000},
        {"filePath": "\u0000"},
    ]:
        result = editor.client.run(lambda c, a=args: c.call_tool("closeDiff", a))  # type: ignore[misc]
        assert not result.is_error and json.loads(result.content[0].text) == {}, (args, result)


# -- known bugs ---------------------------------------------------------------------------


def test_lsp_tools_refuse_paths_that_are_not_regular_files(editor: Editor) -> None:
    """Was bug G (fixed in 50ab291): lsp_hover on a FIFO froze Neovim itself."""
    fifo = editor.special / "fifo"
    pending = asyncio.run_coroutine_threadsafe(
        editor.client.client.call_tool("lsp_hover", {"path": str(fifo), "line": 1, "column": 1}),
        editor.loop.loop,
    )
    try:
        # Either the call is answered, or Neovim stops answering (the bug): whichever comes first.
        wait_for(lambda: pending.done() or not _nvim_responds(editor.nvim, 0.3), 30, what="hover or a freeze")
        assert _nvim_responds(editor.nvim, 1.5), "Neovim froze: blocked opening the FIFO"
        result = pending.result(30)
        assert result.is_error and "regular file" in result.content[0].text, result.content[0].text
        directory = editor.client.run(
            lambda c: c.call_tool(
                "lsp_document_symbols", {"path": str(editor.special)}, read_timeout_seconds=20
            )
        )
        assert directory.is_error, "a directory was loaded into a hidden buffer"
    finally:
        _feed_fifo(fifo)  # Neovim reads EOF from the FIFO and goes on
        _wait_responsive(editor)
        pending.cancel()


def _nvim_responds(nvim: Neovim, timeout: float) -> bool:
    """Ask Neovim over a connection of its own (pynvim's would block this thread)."""
    import msgpack

    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(timeout)
        sock.connect(str(nvim.sock))
        sock.sendall(msgpack.packb([0, 1, "nvim_eval", ["1"]]))
        try:
            return bool(sock.recv(4096))
        except TimeoutError:
            return False


def _feed_fifo(fifo: Path) -> None:
    # Opening for writing succeeds at once while Neovim waits in open() for reading; closing it
    # gives Neovim EOF. Non-blocking: if nobody reads, there is nothing to free.
    with contextlib.suppress(OSError):
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)


def _wait_responsive(ed: Editor) -> None:
    deadline = time.monotonic() + 20
    while not _nvim_responds(ed.nvim, 0.5):
        assert time.monotonic() < deadline, "Neovim did not recover"
        _feed_fifo(ed.special / "fifo")
    wait_for(
        lambda: not ed.client.run(lambda c: c.call_tool("nvim_info", {}), timeout=30).is_error,
        max(deadline - time.monotonic(), 0.1),
        0.2,
        what="the server recovered",
    )


def test_a_proposal_of_one_empty_line_keeps_its_newline(editor: Editor) -> None:
    """Was bug J (fixed in 50ab291)."""
    path = str(editor.workspace / "one-empty-line.txt")
    for content in ("\n", "\r\n"):
        opened = editor.client.run(
            lambda c, t=content: c.call_tool("openDiff", {"filePath": path, "newContent": t})
        )  # type: ignore[misc]
        assert not opened.is_error
        closed = editor.client.run(lambda c: c.call_tool("closeDiff", {"filePath": path}))
        assert json.loads(closed.content[0].text) == {"content": content}


def test_a_proposal_emptied_by_the_user_is_accepted_empty(editor: Editor) -> None:
    path = str(editor.workspace / "emptied.txt")
    opened = editor.client.run(lambda c: c.call_tool("openDiff", {"filePath": path, "newContent": "abc\n"}))
    assert not opened.is_error
    try:
        editor.nvim.lua(
            "for _, b in ipairs(vim.api.nvim_list_bufs()) do"
            " if vim.api.nvim_buf_get_name(b):find('emptied.txt (new file)', 1, true) then"
            " vim.api.nvim_buf_call(b, function() vim.cmd('silent normal! ggdG') end) end end"
        )
    finally:
        closed = editor.client.run(lambda c: c.call_tool("closeDiff", {"filePath": path}))
    assert json.loads(closed.content[0].text) == {"content": ""}  # what :w would write


# -- nothing lost (item 7) ----------------------------------------------------------------


def test_nothing_lost(editor: Editor) -> None:
    """After everything above: the user's unsaved buffer is intact and still modified; no file
    in the workspace was written, created or removed; the server and Neovim are healthy."""
    lines, modified = _held(editor)
    assert lines == HELD_LINES
    assert modified is True
    assert (editor.workspace / "notes.txt").read_bytes() == WORKSPACE_FILES["notes.txt"]
    assert tree_digest(editor.workspace) == editor.disk
    assert_healthy(editor.nvim, editor.disc, editor.loop)
    assert editor.disc.token not in editor.nvim.log_text()
