"""Debugging through MCP: the nvim-dap tools, driving a real program through its debug session.

By default nvim-dap is the stand-in in tests/fixtures/dap_standin (nvim-dap is on no registry we
reach); with NVIM_DAP_PATH=<checkout of mfussenegger/nvim-dap> the same tests run against the
real nvim-dap and the real debugpy adapter.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import ROOT, Neovim, mcp_client, wait_for

PROGRAM = ROOT / "tests" / "fixtures" / "dap" / "program.py"
PYTHON = ROOT / ".venv" / "bin" / "python"
REAL_DAP = os.environ.get("NVIM_DAP_PATH")
DAP_PATH = Path(REAL_DAP) if REAL_DAP else ROOT / "tests" / "fixtures" / "dap_standin"

DAP_INIT = f"""
vim.opt.runtimepath:prepend('{DAP_PATH}')
local dap = require('dap')
dap.adapters.python = {{ type = 'executable', command = '{PYTHON}', args = {{ '-m', 'debugpy.adapter' }} }}
dap.configurations.python = {{
  {{ type = 'python', request = 'launch', name = 'fixture', program = '{PROGRAM}', justMyCode = true,
     console = 'internalConsole' }},
  {{ type = 'python', request = 'launch', name = 'sleeper', program = '{PROGRAM}', args = {{ '--sleep' }},
     justMyCode = true, console = 'internalConsole', standin_sleep_at_line = 24 }},
}}
"""


class Tools:
    """One MCP session (the official Python SDK client) for a whole scenario."""

    def __init__(self, nvim: Neovim) -> None:
        self.nvim = nvim
        self.disc = nvim.wait_discovery()

    def __call__(self, name: str, args: dict[str, Any] | None = None) -> Any:
        async def go() -> Any:
            async with mcp_client(self.disc.url, self.disc.token) as client:
                return await client.call_tool(name, args or {}, read_timeout_seconds=None)

        result = asyncio.run(go())
        text = result.content[0].text if result.content else ""
        if result.is_error:
            raise ToolError(text)
        try:
            return json.loads(text)
        except ValueError:
            return text


class ToolError(Exception):
    pass


@pytest.fixture
def dap_nvim(make_nvim) -> Neovim:  # type: ignore[no-untyped-def]
    nvim: Neovim = make_nvim(init_lua=DAP_INIT)
    nvim.wait_state("running")
    return nvim


@pytest.fixture
def tools(dap_nvim: Neovim) -> Tools:
    return Tools(dap_nvim)


def test_a_whole_debugging_session(dap_nvim: Neovim, tools: Tools) -> None:
    status = tools("dap_status")
    assert status["active"] is False and "fixture" in status["configurations"]
    assert "no active debug session" in tools("dap_continue")["message"]

    bp = tools("dap_set_breakpoint", {"filename": str(PROGRAM), "line": 13})
    assert bp["file"] == str(PROGRAM) and bp["line"] == 13
    buf = dap_nvim.lua("return vim.fn.bufnr(...)", str(PROGRAM))
    assert buf > 0 and dap_nvim.lua("return vim.fn.win_findbuf(...)", buf) == []  # loaded, not shown
    signs = dap_nvim.lua("return vim.fn.sign_getplaced(..., { group = 'dap_breakpoints' })[1].signs", buf)
    assert [s["lnum"] for s in signs] == [13]  # the user sees it

    stop = tools("dap_run", {"configuration": "fixture"})
    assert stop["paused"] is True and stop["reason"] == "breakpoint"
    assert stop["frame"]["function"] == "main" and stop["frame"]["line"] == 13
    assert stop["frame"]["file"] == str(PROGRAM)
    assert ">  13      result = add(items[0], items[1])" in stop["code"]
    assert tools("dap_breakpoints")["breakpoints"][0]["verified"] is True

    status = tools("dap_status")
    assert status["active"] is True and status["adapter"] == "python" and status["stopped"] is True
    assert "supportsConfigurationDoneRequest" in status["capabilities"]

    trace = tools("dap_stacktrace")
    assert [f["function"] for f in trace["frames"][:2]] == ["main", "<module>"]
    scopes = tools("dap_scopes")
    local_scope = next(s for s in scopes["scopes"] if s["name"] == "Locals")
    variables = {
        v["name"]: v
        for v in tools("dap_variables", {"variables_reference": local_scope["variables_reference"]})[
            "variables"
        ]
    }
    assert variables["items"]["value"] == "[1, 2, 3]" and variables["items"]["variables_reference"] > 0
    assert variables["name"]["value"] == "'world'"
    items = tools("dap_variables", {"variables_reference": variables["items"]["variables_reference"]})
    assert [v["value"] for v in items["variables"] if v["name"] in ("0", "1", "2")] == ["1", "2", "3"]

    assert tools("dap_evaluate", {"expression": "name.upper()"})["result"] == "'WORLD'"
    failed = tools("dap_evaluate", {"expression": "1/0"})
    assert failed["ok"] is False and "ZeroDivisionError" in failed["error"]

    into = tools("dap_step_into")
    assert into["frame"]["function"] == "add" and into["frame"]["line"] == 5 and into["reason"] == "step"
    over = tools("dap_step_over")
    assert over["frame"]["line"] == 6
    out = tools("dap_step_out")
    assert out["frame"]["function"] == "main"

    ran = tools("dap_run_to", {"filename": str(PROGRAM), "line": 16})
    assert ran["frame"]["line"] == 16 and ran["frame"]["function"] == "main"
    assert [b["line"] for b in tools("dap_breakpoints")["breakpoints"]] == [13]  # set aside, then restored
    assert tools("dap_current_location", {"context_lines": 1})["frame"]["line"] == 16

    output = tools("dap_program_output", {"category": "stdout"})["text"]
    assert "hello world" in output and "result 3" in output

    end = tools("dap_continue")
    assert end.get("terminated") is True and end["exit_code"] == 0
    wait_for(lambda: tools("dap_status")["active"] is False, what="session gone")
    assert "item 3" in tools("dap_program_output")["text"]  # kept after the session ended


def test_pause_a_running_program_and_terminate(dap_nvim: Neovim, tools: Tools) -> None:
    started = tools("dap_run", {"configuration": "sleeper", "wait_until_paused": False})
    assert started["started"] is True
    still = tools("dap_wait_until_paused", {"timeout_ms": 500})
    assert still["running"] is True and "still running" in still["message"]
    loc = tools("dap_current_location")
    assert loc["paused"] is False
    assert "no stopped thread" in tools("dap_step_over")["message"]
    paused = tools("dap_pause")
    assert paused["paused"] is True and paused["reason"] == "pause"
    assert paused["frame"]["function"] in ("spin", "<module>")
    assert tools("dap_terminate")["terminated"] is True
    wait_for(lambda: tools("dap_status")["active"] is False, what="terminated")


def test_bad_input_gives_clear_answers(dap_nvim: Neovim, tools: Tools) -> None:
    with pytest.raises(ToolError, match="no such file"):
        tools("dap_set_breakpoint", {"filename": str(PROGRAM.parent / "missing.py"), "line": 1})
    with pytest.raises(ToolError, match="outside"):
        tools("dap_set_breakpoint", {"filename": str(PROGRAM), "line": 999})
    with pytest.raises(ToolError, match="no configuration named"):
        tools("dap_run", {"configuration": "nope"})
    assert tools("dap_remove_breakpoint", {"filename": str(PROGRAM), "line": 3})["removed"] is False
    tools("dap_set_breakpoint", {"filename": str(PROGRAM), "line": 5, "condition": "a == 1"})
    stop = tools("dap_run", {"configuration": "fixture"})
    assert stop["frame"]["function"] == "add"
    with pytest.raises(ToolError, match="thread 999"):
        tools("dap_stacktrace", {"thread_id": 999})
    with pytest.raises(ToolError, match="frame 987654"):
        tools("dap_scopes", {"frame_id": 987654})
    raised = tools("dap_evaluate", {"expression": "undefined_name + 1"})
    assert raised["ok"] is False and "undefined_name" in raised["error"]
    assert tools("dap_clear_breakpoints")["removed"] == 1
    assert tools("dap_breakpoints")["count"] == 0
    assert tools("dap_terminate")["terminated"] is True


WAIT_LISTENERS = """
local dap = require('dap')
local left = {}
for _, event in ipairs({ 'event_stopped', 'event_terminated', 'event_exited' }) do
  for key in pairs(dap.listeners.after[event]) do
    if key:find('gemini_companion.wait.', 1, true) then
      table.insert(left, event .. ' ' .. key)
    end
  end
end
return left
"""


def test_a_refused_step_leaves_no_wait_behind(dap_nvim: Neovim, tools: Tools) -> None:
    tools("dap_set_breakpoint", {"filename": str(PROGRAM), "line": 13})
    assert tools("dap_run", {"configuration": "fixture"})["frame"]["line"] == 13
    assert dap_nvim.lua(WAIT_LISTENERS) == []  # the first stop's wait is over
    with pytest.raises(ToolError, match=r"next failed: .*999"):
        tools("dap_step_over", {"thread_id": 999, "timeout_ms": 100000})
    # The adapter refused: the wait for the stop that will never come is gone at once, not when
    # its timer runs out (its listeners would otherwise answer the next stop of any later call).
    assert dap_nvim.lua(WAIT_LISTENERS) == []
    assert tools("dap_step_over")["frame"]["line"] == 14
    assert dap_nvim.lua(WAIT_LISTENERS) == []
    assert tools("dap_terminate")["terminated"] is True


def test_dap_tools_are_absent_without_nvim_dap(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()

    async def names() -> list[str]:
        async with mcp_client(disc.url, disc.token) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert not [n for n in asyncio.run(names()) if n.startswith("dap_")]
    nvim.api.command("checkhealth gemini_companion")
    assert "nvim-dap is not installed" in "\n".join(nvim.api.current.buffer[:])
