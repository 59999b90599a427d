"""Who may get in, where it needs real Lua or the host's life with Neovim: the token in what Lua
shows, discovery directories other users made (as :checkhealth and :GeminiStatus tell it), the
host's channel, and the Lua tools' own refusals. What the Python server decides alone (Host,
Origin, caps, idle sockets, arguments refused before Neovim): tests/protocol/test_who_gets_in.py."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.helpers import Neovim, initialize_body, mcp_client, wait_for
from tests.support.tool_calls import call_tools

INIT = initialize_body("sec")
# `make stress` (STRESS=1): the hostile inputs at full size (bench/reliability.md).
OTHER_UID = 65534  # nobody: the other local user


def as_other_user(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `cmd` as another local user (needs root and setpriv, as on CI)."""
    setpriv = shutil.which("setpriv")
    if (
        setpriv is None
        or subprocess.run(["id", "-u"], check=False, capture_output=True, text=True).stdout.strip() != "0"
    ):
        pytest.fail("this test needs root and setpriv (util-linux) to act as another user")
    return subprocess.run(
        [setpriv, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *map(str, cmd)],
        check=False,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory like /tmp (mode 1777, reachable by every user) to be Neovim's TMPDIR."""
    path = Path(tempfile.mkdtemp(prefix="gemini-companion-shared-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def told(nvim: Neovim, text: str) -> bool:
    return any(text in str(note[0]) for note in nvim.notifications())


def test_the_token_stays_out_of_logs_status_errors_and_configs(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")

    async def failing_calls() -> list[str]:
        texts = []
        async with aiohttp.ClientSession() as http:
            for headers in (
                {"Authorization": f"Bearer {disc.token}x"},
                {"Authorization": disc.token},
                {"Authorization": f"Bearer {disc.token}", "Origin": "null"},
            ):
                async with http.post(disc.url, data=INIT, headers=headers) as resp:
                    texts.append(await resp.text())
        return texts

    texts = asyncio.run(failing_calls())
    nvim.api.command("GeminiMcpConfig claude")
    nvim.api.command("GeminiStatus")
    shown = "\n".join(nvim.api.current.buffer[:])
    everything = "\n".join(texts) + shown + json.dumps(nvim.notifications()) + nvim.log_text()
    everything += json.dumps(nvim.server_state())
    assert disc.token not in everything
    wait_for(lambda: "listening on" in nvim.log_text(), what="log written")


def test_a_discovery_directory_made_by_another_user_is_refused(make_nvim, shared_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    # Another user creates $TMPDIR/gemini (0777) before us, to read the token we would put there.
    assert as_other_user("mkdir", "-m", "0777", shared_tmp / "gemini").returncode == 0
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    state = nvim.wait_state("running")
    error = state.get("discovery_error", "")
    assert f"refusing the discovery directory {shared_tmp / 'gemini'}" in error, state
    assert f"belongs to uid {OTHER_UID}" in error and "set $TMPDIR to a private directory" in error
    wait_for(lambda: told(nvim, "refusing the discovery directory"), what="the user told")
    assert not list((shared_tmp / "gemini").rglob("*.json"))  # nothing written in their directory
    token = nvim.lua("return vim.env.GEMINI_CLI_IDE_AUTH_TOKEN")
    assert token and as_other_user("grep", "-rl", "-e", token, shared_tmp).returncode == 1  # found nowhere
    lines = "\n".join(nvim.lua("return require('gemini_companion.status').lines()"))
    assert "not written: refusing the discovery directory" in lines
    health = nvim.health()
    assert f"{shared_tmp / 'gemini'} belongs to uid {OTHER_UID}: the server refuses" in health
    assert "is writable" not in health


def test_a_loose_directory_of_ours_is_made_private_and_theirs_inside_is_refused(
    make_nvim, shared_tmp: Path
) -> None:  # type: ignore[no-untyped-def]
    gemini = shared_tmp / "gemini"
    gemini.mkdir()
    gemini.chmod(0o777)  # ours, but anyone may add, rename or remove entries
    assert as_other_user("mkdir", "-m", "0777", gemini / "ide").returncode == 0  # and they did
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    error = nvim.wait_state("running").get("discovery_error", "")
    assert f"refusing the discovery directory {gemini / 'ide'}" in error and f"uid {OTHER_UID}" in error
    assert gemini.stat().st_mode & 0o777 == 0o700  # repaired: ours
    assert not list((gemini / "ide").iterdir())
    (gemini / "ide").rmdir()
    nvim.api.command("GeminiRestart")
    disc = nvim.wait_discovery()
    assert disc.path.parent == gemini / "ide" and disc.path.stat().st_mode & 0o777 == 0o600
    # Now they can neither swap the directory for theirs nor read the token.
    moved = as_other_user("mv", gemini / "ide", shared_tmp / "stolen")
    assert moved.returncode != 0 and "Permission denied" in moved.stderr
    assert as_other_user("grep", "-rl", "-e", disc.token, shared_tmp).returncode != 0
    assert not [p.name for p in (gemini / "ide").iterdir() if p.name.endswith(".tmp")]


def test_a_symlinked_discovery_directory_is_refused_also_at_cd(make_nvim, shared_tmp: Path) -> None:  # type: ignore[no-untyped-def]
    theirs = shared_tmp / "theirs"
    assert as_other_user("mkdir", "-m", "0777", theirs).returncode == 0
    assert as_other_user("ln", "-s", theirs, shared_tmp / "gemini").returncode == 0
    nvim: Neovim = make_nvim(tmpdir=shared_tmp)
    error = nvim.wait_state("running").get("discovery_error", "")
    assert f"refusing the discovery directory {shared_tmp / 'gemini'}: it is a symbolic link" in error
    assert not list(theirs.rglob("*"))  # nothing created through the link
    health = nvim.health()
    assert f"{shared_tmp / 'gemini'} is a symbolic link: the server refuses" in health
    assert "is writable" not in health
    (shared_tmp / "gemini").unlink()
    nvim.api.command("GeminiRestart")
    disc = nvim.wait_discovery()
    # The directory is swapped for a link while we run (as by someone who could, before we made
    # it private); the next :cd rewrites the file and must not follow it.
    ide = disc.path.parent
    ide.rename(ide.with_name("old"))
    ide.symlink_to(theirs)
    (nvim.workspace / "sub").mkdir()
    nvim.api.command("cd sub")
    wait_for(
        lambda: told(nvim, f"refusing the discovery directory {ide}: it is a symbolic link"), what="told"
    )
    assert not list(theirs.rglob("*"))
    # The state push that carries the error is coalesced (50 ms): wait for it, do not race it.
    wait_for(
        lambda: "symbolic link" in nvim.server_state().get("discovery_error", ""), what="state has the error"
    )


def test_a_channel_neovim_closed_is_reopened_not_replaced_by_the_hosts_own(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    # Neovim closes the server's own channel (as it does after a message it cannot parse).
    closed = nvim.lua(
        """local mine, n = ..., 0
        for _, c in ipairs(vim.api.nvim_list_chans()) do
          if c.stream == 'socket' and c.id ~= mine then vim.fn.chanclose(c.id) n = n + 1 end
        end
        return n""",
        nvim.api.channel_id,
    )
    assert closed == 1

    async def scenario() -> tuple[Any, Any]:
        async with mcp_client(disc.url, disc.token) as client:
            return await client.call_tool("nvim_info", {}), await client.call_tool("companion_status", {})

    info, status = asyncio.run(scenario())
    assert not info.is_error
    # Tool traffic stays off the host's stdio channel: a fresh direct channel carried the call.
    assert status.structured_content["direct_channel"] is True
    assert "reconnected to Neovim" in nvim.log_text()


def test_files_that_would_hang_or_exhaust_neovim_are_refused(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ max_file_bytes = 1024 * 1024 })")
    disc = nvim.wait_discovery()
    big = nvim.workspace / "big.txt"
    big.write_bytes(b"x" * 99 + b"\n" * 1 + (b"y" * 99 + b"\n") * 20_000)  # 2 MB, over the 1 MiB cap
    (nvim.workspace / "status.txt").symlink_to("/proc/self/status")
    # A pipe of Neovim's own, as Neovim names it; far up the fd table, so that the host (where
    # openDiff used to check the path) has nothing there and would have let it through.
    pipe_fd = nvim.lua(
        """_G.__held = {}
        for _ = 1, 300 do table.insert(_G.__held, vim.uv.fs_open('/dev/null', 'r', 0)) end
        _G.__pipe = vim.uv.pipe({ nonblock = false }, { nonblock = false })
        return _G.__pipe.read"""
    )
    assert not os.path.exists(f"/proc/{disc.data['hostPid']}/fd/{pipe_fd}")
    results = call_tools(
        disc,
        [
            ("read_buffer", {"path": str(big)}),
            ("openDiff", {"filePath": str(big), "newContent": "new\n"}),
            ("lsp_document_symbols", {"path": str(big)}),
            ("read_buffer", {"path": str(nvim.workspace / "status.txt")}),
            ("read_buffer", {"path": "/proc/self/status"}),
            ("openDiff", {"filePath": f"/proc/self/fd/{pipe_fd}", "newContent": "x"}),
            ("read_buffer", {"path": f"/proc/self/fd/{pipe_fd}"}),
            ("read_buffer", {"path": "/proc/self/pagemap"}),
            ("read_buffer", {"path": "/dev/zero"}),
            ("lsp_document_symbols", {"path": "/proc/self/pagemap"}),
            ("nvim_info", {}),
        ],
    )
    expected = [
        "too large (2000100 bytes; max_file_bytes = 1048576)",
        "too large",
        "too large",
        "leads into /proc",
        "is in /proc",
        "is in /proc",
        "is in /proc",
        "is in /proc",
        "is in /dev",
        "is in /proc",
    ]
    for (is_error, text), reason in zip(results, expected, strict=False):
        assert is_error and reason in text, (reason, text)
    assert not results[-1][0]  # Neovim never hung
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 1  # no review opened
    assert nvim.lua("return vim.fn.bufnr(...)", str(big)) == -1  # nothing loaded


def test_path_tools_can_be_kept_inside_the_workspace(make_nvim, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    nvim: Neovim = make_nvim(
        init_lua="require('gemini_companion').setup({ tools = { restrict_to_workspace = true } })"
    )
    disc = nvim.wait_discovery()
    (nvim.workspace / "inside.txt").write_text("hello\n")
    (nvim.workspace / "link.txt").symlink_to(outside)
    results = call_tools(
        disc,
        [
            ("read_buffer", {"path": "inside.txt"}),
            ("read_buffer", {"path": str(outside)}),
            ("read_buffer", {"path": "../../outside.txt"}),
            ("read_buffer", {"path": str(nvim.workspace / "link.txt")}),
            ("lsp_document_symbols", {"path": str(outside)}),
        ],
    )
    assert results[0] == (False, results[0][1]) and '"hello"' in results[0][1]
    for is_error, text in results[1:]:
        assert is_error and "outside the workspace" in text and "restrict_to_workspace" in text, text
    assert "secret" not in json.dumps(results)
    assert not any("invalid settings" in str(n[0]) for n in nvim.notifications())


def test_a_read_stops_at_the_limit_whatever_size_the_file_claims(make_nvim) -> None:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua="require('gemini_companion').setup({ max_file_bytes = 65536 })")
    nvim.wait_state("running")
    grown = nvim.workspace / "grown.log"
    grown.write_bytes(b"line\n" * 40_000)  # 200 KB
    error = nvim.lua(
        """local util = require('gemini_companion.builtin.util')
        local check = util.check_file
        util.check_file = function() end -- as if stat had said "small" (/proc files say 0 bytes)
        local ok, err = pcall(util.read_file, ...)
        -- The same read off the main loop (a big review's file) stops there too.
        local async_err
        util.read_file_async(..., function(text, why)
          async_err = text and 'read ' .. #text .. ' bytes' or why
        end)
        vim.wait(5000, function()
          return async_err ~= nil
        end)
        util.check_file = check
        return not ok and { err, async_err }""",
        str(grown),
    )
    assert error == [f"{grown} is too large (more than 65536 bytes; max_file_bytes = 65536)"] * 2
