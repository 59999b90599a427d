"""Sending code to the agent, end to end: a real host and a real agent terminal (the stand-in in
Neovim's :terminal) receive a Visual selection as one bracketed paste, nothing submitted. Every other
case of :GeminiSend, :GeminiAdd and :GeminiSendDiagnostics (Claude's mentions, provider none and
tmux, file trees, escapes, large sends) is tests/lua/send_spec.lua's, with the host stubbed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.agent_terminal import END, START, errors, received, running_agent


def test_a_visual_selection_arrives_whole_as_one_paste(make_nvim: Any, tmp_path: Path) -> None:
    nvim, agent = running_agent(make_nvim, tmp_path)
    nvim.api.input("2Gwvj$")  # charwise, from `message` on line 2 to the end of line 3
    nvim.api.input(":GeminiSend<CR>")
    text = "@src/greet.py (lines 2-3):\n```python\nmessage = f'hello {name}'\n    return message\n```\n"
    received(agent, START + text.encode() + END)  # no Enter: the user asks the question
    assert errors(nvim) == []
