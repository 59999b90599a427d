"""Every path a client gives is a plain file, checked once, on both protocols (the red-team's N2, N4, N5, N6).

Claude's IDE tools over the WebSocket (claude_like, as in test_claude_ide.py) and Gemini's over HTTP (the
`mcp` SDK) name files; none may reach a URL handler (term:// runs a command), a FIFO (it hangs Neovim for
good), /proc, a file over the size cap, or, with tools.restrict_to_workspace, a file outside. And no
client, whatever it calls, accepts a review: only the user does.

One Neovim per setting serves the module's tests (a start costs ~1.4 s): `nvim_with(init)` gives it,
and it is reset after the test (tests/support/shared_nvim.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.claude_ide import claude_like, lock_of, port_of, texts
from tests.support.gemini_ide import PENDING
from tests.support.helpers import Neovim, wait_for
from tests.support.shared_nvim import fresh_editor, shared_neovim
from tests.support.tool_calls import call_tools

RESTRICTED = "vim.g.gemini_companion = { tools = { restrict_to_workspace = true, groups = { dap = false } } }"
SMALL_CAP = "require('gemini_companion').setup({ max_file_bytes = 256 * 1024 })"


@pytest.fixture(scope="module")
def neovims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Neovim]]:
    """The module's Neovims, one per init (started when a test first asks for it)."""
    with contextlib.ExitStack() as stack:
        started: dict[str, Neovim] = {}

        def get(init: str) -> Neovim:
            if init not in started:
                base = tmp_path_factory.mktemp("security_paths")
                started[init] = stack.enter_context(shared_neovim(base, init_lua=init))
            return started[init]

        yield get


@pytest.fixture
def nvim_with(neovims: Callable[[str], Neovim]) -> Iterator[Callable[[str], Neovim]]:
    """A Neovim started with `init`, reset after the test."""
    used: list[Neovim] = []

    def get(init: str) -> Neovim:
        used.append(neovims(init))
        return used[-1]

    yield get
    for nvim in used:
        fresh_editor(nvim)


def claude_calls(nvim: Neovim, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The results of Claude IDE tool calls, in order, in one WebSocket session."""
    nvim.wait_state("running")
    token, port = lock_of(nvim)[1]["authToken"], port_of(nvim)

    async def go() -> list[dict[str, Any]]:
        async with claude_like(port, token) as claude:
            return [await claude.call(name, args) for name, args in calls]

    return asyncio.run(go())


def refused(result: dict[str, Any]) -> str:
    """The reason a Claude tool gave for refusing (an error result or success = false)."""
    text = " ".join(texts(result))
    reply = json.loads(text) if text.startswith("{") else {}
    assert result.get("isError") or reply.get("success") is False, result
    return text


@pytest.mark.parametrize("init", ["", RESTRICTED], ids=["defaults", "restricted"])
def test_open_file_with_a_url_runs_nothing(nvim_with: Callable[[str], Neovim], init: str) -> None:
    nvim = nvim_with(init)
    ws = nvim.workspace
    (ws / "term:").mkdir()
    (ws / "term:" / "sh x.sh").write_text("decoy\n")  # what filereadable() used to test
    (ws / "x.sh").write_text("id > PWNED_term\n")
    results = claude_calls(
        nvim,
        [
            ("openFile", {"filePath": "term://sh x.sh"}),
            ("openFile", {"filePath": "scp://localhost//etc/hostname"}),
            ("openFile", {"filePath": "http://127.0.0.1:9/x"}),
            ("checkDocumentDirty", {"filePath": "term://sh x.sh"}),
            ("saveDocument", {"filePath": "term://sh x.sh"}),
        ],
    )
    for result in results:
        assert "is a URL, not a file path" in refused(result)
    assert nvim.api.call("eval", "1") == 1
    assert not (ws / "PWNED_term").exists()
    assert (
        nvim.lua(
            "return vim.tbl_filter(function(b) return vim.bo[b].buftype == 'terminal' end,"
            " vim.api.nvim_list_bufs())"
        )
        == []
    )


def test_open_file_refuses_what_is_not_a_plain_file(nvim_with: Callable[[str], Neovim]) -> None:
    nvim = nvim_with(SMALL_CAP)
    ws = nvim.workspace
    os.mkfifo(ws / "notes.txt")
    (ws / "big.txt").write_bytes(b"x" * 2 * 1024 * 1024)
    (ws / "dir").mkdir()
    results = claude_calls(
        nvim,
        [
            ("openFile", {"filePath": str(ws / "notes.txt")}),
            ("openFile", {"filePath": "/proc/self/pagemap"}),
            ("openFile", {"filePath": str(ws / "big.txt")}),
            ("openFile", {"filePath": str(ws / "dir")}),
        ],
    )
    reasons = [refused(r) for r in results]
    assert "is not a regular file (fifo)" in reasons[0]
    assert "is in /proc" in reasons[1]
    assert "too large" in reasons[2]
    assert "is not a regular file (directory)" in reasons[3]
    assert nvim.api.call("eval", "1") == 1  # Neovim never blocked on the FIFO
    assert nvim.lua("return vim.fn.bufnr(...)", str(ws / "notes.txt")) == -1


def test_restrict_to_workspace_holds_for_claude_tools_and_buffers_by_number(
    nvim_with: Callable[[str], Neovim], tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("line1 SECRET-A\nline2 SECRET-B\nline3 SECRET-C\n")
    nvim = nvim_with(RESTRICTED)
    (nvim.workspace / "inside.txt").write_text("inside\n")
    (nvim.workspace / "link.txt").symlink_to(secret)
    results = claude_calls(
        nvim,
        [
            ("openFile", {"filePath": str(secret), "startText": "line1", "endText": "line3"}),
            ("openFile", {"filePath": str(nvim.workspace / "link.txt")}),
            ("getCurrentSelection", {}),
            ("openFile", {"filePath": str(nvim.workspace / "inside.txt")}),
        ],
    )
    for result in results[:2]:
        assert "outside the workspace" in refused(result)
    assert "SECRET" not in json.dumps(results)
    assert texts(results[3]) == [f"Opened file: {nvim.workspace / 'inside.txt'}"]
    # Gemini's side: openDiff of a file outside, and read_buffer of buffers by number.
    disc = nvim.wait_discovery()
    nvim.api.command(f"edit {secret}")  # the user opened it: still no client's to read
    user_buf = nvim.api.current.buffer.number
    nvim.api.command("terminal echo terminal text")
    term_buf = nvim.api.current.buffer.number
    results_http = call_tools(
        disc,
        [
            ("openDiff", {"filePath": str(secret), "newContent": "x\n"}),
            ("read_buffer", {"bufnr": user_buf}),
            ("read_buffer", {"bufnr": term_buf}),
        ],
    )
    assert results_http[0][0] and "outside the workspace" in results_http[0][1]
    assert results_http[1][0] and "outside the workspace" in results_http[1][1]
    assert results_http[2][0] and "not a file in the workspace" in results_http[2][1]
    assert "SECRET" not in json.dumps(results_http)
    assert nvim.lua(PENDING) == []


def test_no_client_accepts_a_review(nvim_with: Callable[[str], Neovim]) -> None:
    """Another session's saveDocument of "<file> (proposed)" used to accept Gemini's review, and Gemini was
    told diffAccepted; a tool of the user's that writes it must not either."""
    from tests.support.node_driver import NodeDriver

    nvim = nvim_with("")
    ws = nvim.workspace
    (ws / "t.txt").write_text("mine\n")
    disc = nvim.wait_discovery()
    nvim.lua(
        """require('gemini_companion').register({ name = 'write_buffer',
          args = { name = { required = true } },
          execute = function(args)
            vim.api.nvim_buf_call(vim.fn.bufnr(args.name), function() vim.cmd.write() end)
            return 'written'
          end })"""
    )
    with NodeDriver("ts_client.mjs", disc.url, disc.token, log_dir=nvim.base) as gemini:
        gemini.wait_event(lambda e: e.get("event") == "connected", what="connected")
        assert gemini.send(
            "call", name="openDiff", args={"filePath": str(ws / "t.txt"), "newContent": "AGENT\n"}
        )["ok"]
        wait_for(lambda: nvim.lua(PENDING) == [str(ws / "t.txt")], what="gemini's review")
        proposed, on_disk = f"{ws / 't.txt'} (proposed)", f"{ws / 't.txt'} (on disk)"
        results = claude_calls(
            nvim,
            [
                ("saveDocument", {"filePath": proposed}),
                ("checkDocumentDirty", {"filePath": proposed}),
                ("saveDocument", {"filePath": on_disk}),
            ],
        )
        for result in results:
            assert "Document not open" in refused(result)
        written = call_tools(disc, [("write_buffer", {"name": proposed})])
        assert nvim.lua(PENDING) == [str(ws / "t.txt")]  # still waiting for the user
        assert not [
            e
            for e in list(gemini.events)
            if e.get("event") == "notification" and "diff" in str(e.get("method"))
        ]
        said = [str(n[0]) for n in nvim.notifications()]
        assert any("only you accept a review" in s for s in said), (said, written)
        assert (ws / "t.txt").read_text() == "mine\n"


# What Neovim holds for a buffer, and its first line: a client's file is never decompressed or unpacked.
HELD = """local buf = vim.fn.bufnr(...)
if buf == -1 or not vim.api.nvim_buf_is_loaded(buf) then return vim.NIL end
return { lines = vim.api.nvim_buf_line_count(buf), first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1],
  filetype = vim.bo[buf].filetype, shiftwidth = vim.bo[buf].shiftwidth }"""


def hostile_files(ws: Path) -> dict[str, Path]:
    """Small files that other plugins' read autocommands would turn into something big or run a tool on:
    10 KB of gzip that is 10 MB of text, a zip (zip.vim lists it with unzip), and a Latin-1 file that
    doubles in Neovim (UTF-8 inside); beside them an ordinary file, under the workspace's .editorconfig."""
    files = {
        "bomb": ws / "notes.txt.gz",
        "zip": ws / "docs.zip",
        "latin1": ws / "latin1.txt",
        "plain": ws / "plain.py",
    }
    files["bomb"].write_bytes(gzip.compress((b"x" * 99 + b"\n") * 100_000))
    with zipfile.ZipFile(files["zip"], "w") as archive:
        archive.writestr("inner.txt", "inner text\n")
    files["latin1"].write_bytes(b"\xe9" * 200_000)
    files["plain"].write_text("print('hi')\n")
    (ws / ".editorconfig").write_text("root = true\n[*.py]\nindent_size = 7\n")
    return files


def assert_read_as_bytes(nvim: Neovim, files: dict[str, Path]) -> None:
    bomb = nvim.lua(HELD, str(files["bomb"]))
    assert bomb is not None and bomb["lines"] < 1000 and "xxxx" not in bomb["first"], bomb
    archive = nvim.lua(HELD, str(files["zip"]))
    assert archive is not None and archive["first"].startswith("PK\x03\x04"), archive  # not zip.vim's listing
    assert nvim.lua(HELD, str(files["latin1"])) is None  # refused: nothing held
    assert nvim.api.call("eval", "1") == 1


def test_open_file_never_decompresses_or_unpacks_and_holds_the_buffer_to_max_file_bytes(
    nvim_with: Callable[[str], Neovim],
) -> None:
    """N4's size check was of the file on disk; the gzip plugin then decompressed a small .gz into a buffer
    of millions of lines (the red-team's R6: a 300 KB one froze Neovim for over 35 s)."""
    nvim = nvim_with(SMALL_CAP)
    files = hostile_files(nvim.workspace)
    results = claude_calls(nvim, [("openFile", {"filePath": str(files[name])}) for name in files])
    opened = dict(zip(files, results, strict=True))
    for name in ("bomb", "zip", "plain"):
        assert texts(opened[name]) == [f"Opened file: {files[name]}"], opened[name]
    assert "is too large once loaded (400001 bytes in Neovim; max_file_bytes = 262144)" in refused(
        opened["latin1"]
    )
    assert_read_as_bytes(nvim, files)
    # An ordinary file opens as the user's :edit would: its filetype, the .editorconfig.
    plain = nvim.lua(HELD, str(files["plain"]))
    assert (plain["filetype"], plain["shiftwidth"]) == ("python", 7), plain
    assert nvim.lua("return vim.api.nvim_buf_get_name(0)") == str(files["plain"])
    assert nvim.lua("return vim.bo.buflisted")


def test_tools_that_load_a_file_never_decompress_or_unpack_it(nvim_with: Callable[[str], Neovim]) -> None:
    """The LSP tools load a file no buffer has into a hidden one: the same read autocommands as :edit."""
    nvim = nvim_with(SMALL_CAP)
    files = hostile_files(nvim.workspace)
    results = call_tools(
        nvim.wait_discovery(), [("lsp_document_symbols", {"path": str(files[name])}) for name in files]
    )
    said = dict(zip(files, results, strict=True))
    for name in ("bomb", "zip", "plain"):
        assert not said[name][0] and "no LSP client attached" in said[name][1], said[name]
    assert said["latin1"][0] and "is too large once loaded" in said["latin1"][1], said["latin1"]
    assert_read_as_bytes(nvim, files)
    plain = nvim.lua(HELD, str(files["plain"]))
    assert (plain["filetype"], plain["shiftwidth"]) == ("python", 7), plain
