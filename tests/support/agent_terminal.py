"""The stand-in agent in Neovim's terminal (tests/fixtures/agent_standin): starting it, what it received."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import ROOT, Neovim, wait_for

SNACKS = ROOT / "tests" / "fixtures" / "snacks_standin"


class Agent:
    """Where one stand-in agent records; its `cmd` is the terminal.cmd setting."""

    def __init__(self, record: Path, name: str = "agent.py") -> None:
        self.record = record
        program = AGENT
        if name != "agent.py":  # the same program under another name (e.g. `claude`)
            program = record.parent / f"bin-{record.name}" / name
            program.parent.mkdir(parents=True)
            program.symlink_to(AGENT)
        self.cmd = (
            [sys.executable, str(program), str(record)] if name == "agent.py" else [str(program), str(record)]
        )

    def started(self) -> dict[str, Any]:
        path = self.record / "env.json"
        wait_for(path.exists, what="the agent started")
        info: dict[str, Any] = json.loads(path.read_text())
        return info

    def typed(self) -> bytes:
        path = self.record / "input"
        return path.read_bytes() if path.exists() else b""


def start(make_nvim: Any, settings: dict[str, Any], name: str = "nvim", **kwargs: Any) -> Neovim:
    init = f"vim.g.gemini_companion = vim.json.decode({json.dumps(json.dumps(settings))})\n"
    nvim: Neovim = make_nvim(name, init_lua=init + kwargs.pop("init_lua", ""), **kwargs)
    nvim.api.command("set columns=120 lines=40")
    return nvim


def agent_windows(nvim: Neovim) -> list[dict[str, Any]]:
    """The windows of the current tab showing an agent terminal: {win, buf, job, relative, width}."""
    found: list[dict[str, Any]] = nvim.lua(
        """
        local out = {}
        for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
          local buf = vim.api.nvim_win_get_buf(win)
          if vim.bo[buf].buftype == 'terminal' then
            table.insert(out, { win = win, buf = buf, job = vim.bo[buf].channel,
              relative = vim.api.nvim_win_get_config(win).relative, width = vim.api.nvim_win_get_width(win),
              col = vim.api.nvim_win_get_position(win)[2] })
          end
        end
        return out
        """
    )
    return found


def current_buf(nvim: Neovim) -> int:
    return int(nvim.api.current.buffer.number)


def command(nvim: Neovim, cmd: str) -> None:
    """Run an Ex command as a user would: an error message is shown, not raised into the test."""
    nvim.lua("pcall(vim.cmd, ...)", cmd)


def errors(nvim: Neovim) -> list[str]:
    return [str(msg) for msg, level in nvim.notifications() if level >= 3]


START = b"\x1b[200~"


END = b"\x1b[201~"


def running_agent(
    make_nvim: Any, tmp_path: Path, name: str = "agent.py", **settings: Any
) -> tuple[Neovim, Agent]:
    agent = Agent(tmp_path / "agent", name)
    nvim = start(make_nvim, {"terminal": {"cmd": agent.cmd, **settings}})
    open_code(nvim)
    nvim.api.command("Gemini")
    agent.started()
    nvim.api.command("wincmd p")  # back to the code, the agent stays visible
    return nvim, agent


def received(agent: Agent, expected: bytes) -> None:
    wait_for(lambda: agent.typed() == expected, what=f"the agent received {expected!r}")


@pytest.fixture
def tmux_pane(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, Agent]]:
    """A tmux server of its own with one pane running the stand-in agent: Neovim's TMUX and the pane."""
    tmux = shutil.which("tmux")
    assert tmux, "tmux is needed (Debian package tmux)"
    socket = tmp_path / "tmux.sock"
    agent = Agent(tmp_path / "tmux-agent")
    run = [tmux, "-S", str(socket)]
    subprocess.run([*run, "new-session", "-d", "-x", "100", "-y", "30", *agent.cmd], check=True)
    try:
        pane = subprocess.run(
            [*run, "list-panes", "-F", "#{pane_id}"], check=True, capture_output=True, text=True
        ).stdout.strip()
        pid = subprocess.run(
            [*run, "display-message", "-p", "#{pid}"], check=True, capture_output=True, text=True
        ).stdout.strip()
        agent.started()
        yield {"TMUX": f"{socket},{pid},0"}, pane, agent
    finally:
        subprocess.run([*run, "kill-server"], check=False)


AGENT = ROOT / "tests" / "fixtures" / "agent_standin" / "agent.py"


def open_code(nvim: Neovim) -> None:
    (nvim.workspace / "src").mkdir()
    (nvim.workspace / "src" / "greet.py").write_text(CODE)
    nvim.api.command("edit src/greet.py")


CODE = "def greet(name):\n    message = f'hello {name}'\n    return message\n"
