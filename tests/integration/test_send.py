"""Sending code to the agent (:GeminiSend, :GeminiAdd, :GeminiSendDiagnostics): the exact bytes the agent
receives (one bracketed paste, nothing submitted), for the native terminal, a Claude agent (at-mentions,
issue 17's mention module when present) and provider none (a real tmux pane, or a plain refusal).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support import agent_terminal
from tests.support.agent_terminal import (
    END,
    SNACKS,
    START,
    Agent,
    agent_windows,
    command,
    current_buf,
    errors,
    open_code,
    received,
    running_agent,
    start,
)
from tests.support.helpers import Neovim, wait_for

# The shared fixture, used here by name.
tmux_pane = agent_terminal.tmux_pane


def test_a_visual_selection_arrives_whole_as_one_paste(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.input("2Gwvj$")  # charwise, from `message` on line 2 to the end of line 3
    nvim.api.input(":GeminiSend<CR>")
    text = "@src/greet.py (lines 2-3):\n```python\nmessage = f'hello {name}'\n    return message\n```\n"
    received(agent, START + text.encode() + END)  # no Enter: the user asks the question
    assert errors(nvim) == []


def test_a_range_a_cursor_line_and_a_visual_mode_mapping(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.command("1,2GeminiSend")
    one = "@src/greet.py (lines 1-2):\n```python\ndef greet(name):\n    message = f'hello {name}'\n```\n"
    received(agent, START + one.encode() + END)
    nvim.api.command("3")
    nvim.api.command("GeminiSend")
    two = "@src/greet.py (lines 3-3):\n```python\n    return message\n```\n"
    received(agent, START + one.encode() + END + START + two.encode() + END)
    # A <Cmd> mapping runs in Visual mode, without a range.
    nvim.api.command("xnoremap <F5> <Cmd>GeminiSend<CR>")
    nvim.api.input("1GVj<F5>")
    wait_for(lambda: agent.typed().count(START) == 3, what="the third paste")
    assert agent.typed().endswith(START + one.encode() + END)
    assert nvim.api.call("mode") == "n"


def test_add_mentions_a_file_and_diagnostics_are_listed(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    (nvim.workspace / "my notes.txt").write_text("x\n")
    nvim.api.command("GeminiAdd")
    nvim.api.command("GeminiAdd my\\ notes.txt")
    sent = START + b"@src/greet.py " + END + START + b"@my\\ notes.txt " + END
    received(agent, sent)
    command(nvim, "GeminiAdd no/such/file.py")
    assert any("no such file or directory: no/such/file.py" in e for e in errors(nvim))

    nvim.lua(
        """
        local ns = vim.api.nvim_create_namespace('test')
        vim.diagnostic.set(ns, 0, {
          { lnum = 2, col = 4, severity = vim.diagnostic.severity.WARN, message = 'unused', source = 'lint' },
          { lnum = 0, col = 0, severity = vim.diagnostic.severity.ERROR, message = 'bad name' },
        })
        """
    )
    nvim.api.command("GeminiSendDiagnostics")
    listing = "Diagnostics in @src/greet.py:\n- line 1, col 1: error: bad name\n"
    listing += "- line 3, col 5: warning: unused [lint]\n"
    received(agent, sent + START + listing.encode() + END)
    nvim.api.command("3GeminiSendDiagnostics")
    line = "Diagnostics in @src/greet.py:\n- line 3, col 5: warning: unused [lint]\n"
    received(agent, sent + START + listing.encode() + END + START + line.encode() + END)
    command(nvim, "2GeminiSendDiagnostics")
    assert ("gemini-companion: no diagnostics on these lines", 3) in [tuple(n) for n in nvim.notifications()]


def test_a_paste_end_inside_the_text_cannot_end_the_paste(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.current.buffer[:] = ["before\x1b[201~after"]
    nvim.api.command("GeminiSend")
    received(agent, START + b"@src/greet.py (lines 1-1):\n```python\nbefore[201~after\n```\n" + END)


def test_sending_with_no_agent_running_starts_it_and_types_nothing_yet(
    make_nvim: Any, tmp_path: Path
) -> None:
    agent = Agent(tmp_path / "agent")
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd}})
    open_code(nvim)
    command(nvim, "1GeminiSend")
    agent.started()
    assert len(agent_windows(nvim)) == 1
    warnings = [str(msg) for msg, level in nvim.notifications() if level == 3]
    assert warnings[-1].endswith(
        "no agent was running: starting it (:Gemini); send again once its prompt shows"
    )
    # Typed into a program still starting, text could answer its first questions: the first send typed
    # nothing, so the agent receives exactly the second.
    nvim.api.command("wincmd p")
    command(nvim, "2GeminiSend")
    received(
        agent, START + b"@src/greet.py (lines 2-2):\n```python\n    message = f'hello {name}'\n```\n" + END
    )


def test_sending_with_an_agent_that_cannot_start_says_why_once(make_nvim: Any, tmp_path: Path) -> None:
    nvim = start(make_nvim, {"terminal": {"cmd": [str(tmp_path / "no-such-agent")]}})
    nvim.wait_state("running")  # (while the server starts, the agent's start waits for it)
    open_code(nvim)
    command(nvim, "GeminiSend")
    said = [str(msg) for msg, level in nvim.notifications() if level >= 3]
    assert len(said) == 1 and "cannot start" in said[0] and "is not executable" in said[0]


def test_claude_gets_line_mentions_through_its_session_or_typed(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path, name="claude")
    nvim.api.command("2,3GeminiSend")
    received(agent, START + b"@src/greet.py#L2-3 " + END)
    # With issue 17's module: a connected Claude session takes the mention; typed only when it says no.
    nvim.lua(
        """
        _G.mentions, _G.connected = {}, true
        package.loaded['gemini_companion.agents.claude.mention'] = {
          at_mentioned = function(path, first, last)
            table.insert(_G.mentions, { path, first, last }); return _G.connected
          end }
        """
    )
    nvim.api.command("Gemini")  # hidden: shown when the session takes a mention too
    nvim.api.command("1GeminiSend")
    assert len(agent_windows(nvim)) == 1
    nvim.api.command("GeminiAdd")
    full = str(nvim.workspace / "src" / "greet.py")
    assert nvim.lua("return _G.mentions") == [[full, 1, 1], [full]]  # absolute; no lines: the whole file
    nvim.lua("_G.connected = false")
    nvim.api.command("3GeminiSend")
    received(agent, START + b"@src/greet.py#L2-3 " + END + START + b"@src/greet.py#L3 " + END)


def test_provider_none_without_tmux_says_it_cannot(make_nvim: Any, tmp_path: Path) -> None:
    nvim = start(make_nvim, {"terminal": {"provider": "none"}})
    open_code(nvim)
    if os.environ.get("TMUX"):
        nvim.lua("vim.env.TMUX = nil")  # the harness itself may run inside tmux; this user does not
    command(nvim, "GeminiSend")
    (error,) = errors(nvim)
    assert "provider is 'none' and Neovim is not inside tmux: cannot type into the agent" in error


def test_provider_none_pastes_into_a_tmux_pane(
    make_nvim: Any, tmux_pane: tuple[dict[str, str], str, Agent]
) -> None:
    env, pane, agent = tmux_pane
    nvim = start(make_nvim, {"terminal": {"provider": "none"}}, env=env)
    open_code(nvim)
    command(nvim, "GeminiSend")
    assert any("terminal.tmux_target is not set" in e for e in errors(nvim))
    nvim.lua(
        "require('gemini_companion').setup({ terminal = { provider = 'none', tmux_target = ... } })", pane
    )
    nvim.api.command("1,2GeminiSend")
    text = "@src/greet.py (lines 1-2):\n```python\ndef greet(name):\n    message = f'hello {name}'\n```\n"
    received(agent, START + text.encode() + END)  # tmux brackets it: the agent asked for bracketed paste
    nvim.lua(
        "require('gemini_companion').setup({ terminal = { provider = 'none', tmux_target = 'nowhere:9' } })"
    )
    command(nvim, "GeminiSend")
    assert any('tmux could not paste into "nowhere:9"' in e for e in errors(nvim))


def test_sending_to_a_hidden_agent_shows_it_and_keeps_the_cursor(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.command("Gemini")  # hide it
    assert agent_windows(nvim) == []
    code = current_buf(nvim)
    nvim.api.command("GeminiAdd")
    received(agent, START + b"@src/greet.py " + END)
    assert len(agent_windows(nvim)) == 1
    assert current_buf(nvim) == code


def explore(nvim: Neovim, entry: str) -> None:
    """netrw (the real one, built into Neovim) lists the workspace; the cursor goes to `entry`'s line."""
    nvim.api.command("Explore .")
    assert nvim.api.eval("&filetype") == "netrw"
    nvim.api.call("search", "\\V\\^" + entry.replace("\\", "\\\\") + "\\$")  # very nomagic: the text as is
    assert nvim.api.current.line == entry


def test_add_in_netrw_mentions_the_entries_under_the_cursor_or_in_the_range(
    make_nvim: Any, tmp_path: Path
) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    (nvim.workspace / "my notes.txt").write_text("x\n")
    explore(nvim, "my notes.txt")
    nvim.api.command("GeminiAdd")
    sent = START + b"@my\\ notes.txt " + END  # the file, not the netrw buffer
    received(agent, sent)
    nvim.api.call("search", "^src/$")
    nvim.api.input("Vk:GeminiAdd<CR>")  # :'<,'>GeminiAdd: ./ is no entry; src/ is a directory
    sent += START + b"@src/ " + END
    received(agent, sent)
    nvim.api.command("xnoremap <F6> <Cmd>GeminiAdd<CR>")  # a Visual-mode mapping, as the README suggests
    nvim.api.call("search", "^src/$")
    nvim.api.input("Vj<F6>")
    received(agent, sent + START + b"@src/ @my\\ notes.txt " + END)
    assert nvim.api.call("mode") == "n"
    nvim.api.command("1")  # the banner: netrw's own keys live there, nothing to mention
    command(nvim, "GeminiAdd")
    assert any("no file under the cursor in this netrw buffer" in e for e in errors(nvim))
    assert nvim.api.current.line == nvim.api.call("getline", 1)  # the banner was not acted on


def test_add_in_netrw_tree_listing_names_nested_files(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.command("let g:netrw_liststyle = 3")  # netrw's tree style: a row holds only the name
    explore(nvim, "| src/")
    nvim.api.input("<CR>")  # open src/ in place
    wait_for(lambda: nvim.api.call("search", "greet\\.py$", "w") > 0, what="src/ opened in the tree")
    nvim.api.command("GeminiAdd")
    received(agent, START + b"@src/greet.py " + END)


# Stand-ins for the tree plugins (not installable in CI: they come from GitHub only), each answering
# through the same public function the adapter calls on the real plugin, with the same shapes:
# oil.get_current_dir + get_entry_on_line, neo-tree.sources.manager.get_state_for_window().tree:get_node,
# nvim-tree.api.tree.get_node_under_cursor, mini.files.get_fs_entry. Each lists `_G.tree` (absolute
# paths, '..' for the parent row) one per line.
FAKE_TREES = """
local tree, ws = _G.tree, _G.ws
local function kind(p) return vim.fn.isdirectory(p) == 1 and 'directory' or 'file' end
package.loaded['oil'] = {
  get_current_dir = function() return ws .. '/' end,
  get_entry_on_line = function(_, l)
    if tree[l] == '..' then return { name = '..', type = 'directory' } end
    -- oil lists one directory: an entry outside it has no row
    local inside = vim.startswith(tree[l], ws .. '/')
    return inside and { name = tree[l]:sub(#ws + 2), type = kind(tree[l]) } or nil end,
}
package.loaded['neo-tree.sources.manager'] = { get_state_for_window = function()
  return { tree = { get_node = function(_, l)
    return tree[l] == '..' and { type = 'message' } or { type = kind(tree[l]), path = tree[l] } end } } end }
package.loaded['nvim-tree.api'] = { tree = { get_node_under_cursor = function()
  local p = tree[vim.api.nvim_win_get_cursor(0)[1]]
  return { name = vim.fs.basename(p), absolute_path = p ~= '..' and p or nil, type = kind(p) } end } }
package.loaded['mini.files'] = { get_fs_entry = function(_, l)
  local p = tree[l]
  return p ~= '..' and { fs_type = kind(p), name = vim.fs.basename(p), path = p } or nil end }
"""


@pytest.mark.parametrize("filetype", ["oil", "neo-tree", "NvimTree", "minifiles"])
def test_add_in_plugin_file_trees_mentions_their_entries(
    make_nvim: Any, tmp_path: Path, filetype: str
) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    ws = str(nvim.workspace)
    (nvim.workspace / "my notes.txt").write_text("x\n")
    (tmp_path / "outside.txt").write_text("x\n")
    tree = ["..", f"{ws}/src", f"{ws}/my notes.txt", f"{ws}/src/greet.py", str(tmp_path / "outside.txt")]
    nvim.lua("_G.tree, _G.ws = ...", tree, ws)
    nvim.lua(FAKE_TREES)
    nvim.api.command("enew")
    nvim.api.current.buffer[:] = ["../", "src/", "my notes.txt", "  greet.py", "outside.txt"]
    nvim.api.command(f"setlocal buftype=nofile filetype={filetype}")
    nvim.api.command("3")
    nvim.api.command("GeminiAdd")
    sent = START + b"@my\\ notes.txt " + END
    received(agent, sent)
    nvim.api.command("1,5GeminiAdd")  # the parent row is no entry; outside the workspace: absolute
    outside = "" if filetype == "oil" else f" @{tmp_path}/outside.txt"  # oil lists one directory
    sent += START + f"@src/ @my\\ notes.txt @src/greet.py{outside} ".encode() + END
    received(agent, sent)
    assert nvim.api.call("line", ".") == 3  # nvim-tree's adapter visits each line: the cursor is put back
    nvim.api.command("2GeminiSend")  # in a tree its lines are names: :GeminiSend mentions the entries too
    received(agent, sent + START + b"@src/ " + END)
    nvim.lua(
        "package.loaded[...] = {}",
        {
            "oil": "oil",
            "neo-tree": "neo-tree.sources.manager",
            "NvimTree": "nvim-tree.api",
            "minifiles": "mini.files",
        }[filetype],
    )  # the plugin's API changed
    command(nvim, "GeminiAdd")
    assert any(f"no file under the cursor in this {filetype} buffer" in e for e in errors(nvim))


def test_add_escapes_what_ends_a_gemini_mention_and_warns_of_what_the_agent_cannot_read(
    make_nvim: Any, tmp_path: Path
) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    (nvim.workspace / "draft (copy), v2.py").write_text("x\n")
    nvim.api.command("GeminiAdd draft (copy), v2.py")
    sent = START + b"@draft\\ \\(copy\\)\\,\\ v2.py " + END  # gemini's @path would end at ( or ,
    nvim.api.command("GeminiAdd src")
    sent += START + b"@src/ " + END  # a directory, as gemini and claude take one
    received(agent, sent)
    nvim.api.current.buffer[0] = "def hello(name):"  # an edit not written: the agent reads the disk
    nvim.api.command("GeminiAdd")
    received(agent, sent + START + b"@src/greet.py " + END)
    warning = (
        "gemini-companion: src/greet.py has unsaved changes: the agent reads the file on disk (:w first)"
    )
    assert (warning, 3) in [tuple(n) for n in nvim.notifications()]
    nvim.api.command("edit new.py")  # never written: nothing on disk to read
    command(nvim, "GeminiAdd")
    assert any("new.py is not written to disk yet (:w first)" in e for e in errors(nvim))
    assert agent.typed() == sent + START + b"@src/greet.py " + END


def test_sending_to_an_agent_that_exited_in_a_kept_terminal_says_so(make_nvim: Any, tmp_path: Path) -> None:
    """snacks keeps the terminal of an agent that exited when its auto_close is off (so does the stand-in)."""
    agent = Agent(tmp_path / "agent")
    init = f"vim.opt.runtimepath:append({json.dumps(str(SNACKS))})\n"
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd, "provider": "snacks"}}, init_lua=init)
    open_code(nvim)
    nvim.api.command("Gemini")
    agent.started()
    (shown,) = agent_windows(nvim)
    nvim.api.call("chansend", shown["job"], "\x04")  # the agent exits; its buffer stays
    wait_for(lambda: nvim.api.call("jobwait", [shown["job"]], 0) != [-1], what="the agent exited")
    nvim.api.command("wincmd p")
    command(nvim, "GeminiAdd")
    (error,) = errors(nvim)
    assert "the agent has exited (its terminal is still open): close that terminal, start the agent" in error


def test_sending_from_the_agents_own_terminal_is_refused(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    (shown,) = agent_windows(nvim)
    nvim.api.call("win_gotoid", shown["win"])
    command(nvim, "GeminiSend")  # would paste the agent's own screen into its prompt
    assert any("this is the agent's own terminal: send from a code buffer" in e for e in errors(nvim))
    assert agent.typed() == b""


def test_add_takes_a_dollar_in_a_file_name_as_written(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    (nvim.workspace / "routes").mkdir()
    (nvim.workspace / "routes" / "posts.$postId.tsx").write_text("x\n")
    completed = nvim.api.call("getcompletion", "GeminiAdd routes/posts.", "cmdline")
    assert completed == ["routes/posts.\\$postId.tsx"]  # escaped, as file-name completion does
    nvim.api.command("GeminiAdd routes/posts.$postId.tsx")  # typed
    nvim.api.command("GeminiAdd routes/posts.\\$postId.tsx")  # completed
    mention = START + b"@routes/posts.\\$postId.tsx " + END  # gemini's own escape
    received(agent, mention + mention)
    assert errors(nvim) == []


def test_a_selection_of_many_lines_arrives_whole_while_neovim_stays_free(
    make_nvim: Any, tmp_path: Path
) -> None:
    """Issue 29: past STREAM_LINES a send is read, filtered and pasted in time slices. What arrives
    is what a small send would give: one paste, the fence longer than any backtick run in it (one
    late in the text), every control character out."""
    nvim, agent = running_agent(make_nvim, tmp_path)
    lines = [f"row_{i} = {i}" for i in range(30_000)]
    lines[25_000] = "s = '````'"  # a run of four backticks: the fence must be five
    lines[12_345] = "bad = '\x1b[201~\u009b'"  # a paste end and a C1 CSI: both taken out
    (nvim.workspace / "big.py").write_text("\n".join(lines) + "\n")
    nvim.api.command("edit big.py")
    nvim.api.command("%GeminiSend")
    # The command returned after its first slice: the send goes on between the user's keys.
    assert nvim.lua("return require('gemini_companion.terminal.send').sending") is True
    nvim.api.command("1GeminiSend")  # and a second paste never lands inside the first
    said = "gemini-companion: the last send is still being typed into the agent: send again once it is done"
    assert nvim.notifications()[-1][0] == said
    lines[12_345] = "bad = '[201~'"
    fence = "`````"
    text = "@big.py (lines 1-30000):\n" + fence + "python\n" + "\n".join(lines) + "\n" + fence + "\n"
    wait_for(lambda: agent.typed().endswith(END), timeout=60, what="the paste's end")
    assert agent.typed() == START + text.encode() + END
