"""The fake Neovim of this tier answers the seam as real Lua does: the same calls, made on a real
Neovim (bridge.lua) and on tests/support/fake_neovim.py, get replies of the same shape, each valid
as seam.py's reply model. A change to bridge.lua's replies fails here until the fake follows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gemini_companion import seam
from pydantic import BaseModel

from tests.support.fake_neovim import FakeNeovim, FakeTool
from tests.support.helpers import Neovim

pytestmark = pytest.mark.e2e  # (a real Neovim: the one test of this tier that starts one)

SETTINGS = {"log_level": "debug", "keepalive_s": 5}
ENVIRON = {"OPENCODE_SERVER_PASSWORD": "contract"}
# An asynchronous tool, registered on both sides alike: its first answer is {pending}.
LATER = """
require('gemini_companion').register({
  name = 'contract_later', description = 'answers later', read_only = true,
  execute = function(_, done) vim.defer_fn(function() done('later') end, 10) end,
})
"""


def shape(value: Any) -> Any:
    """A reply's shape: its keys, recursively, and the JSON type of each value. Lua's empty table
    crosses as an empty array: an empty list and an empty dict are one shape."""
    if isinstance(value, dict):
        return {key: shape(v) for key, v in value.items()} if value else "empty"
    if isinstance(value, list):
        return [shape(value[0])] if value else "empty"
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    return "number" if isinstance(value, int | float) else type(value).__name__


def calls(workspace: Path) -> list[tuple[str, tuple[Any, ...], type[BaseModel] | None]]:
    """The seam calls compared, in order: (code, arguments, the reply model)."""
    target = str(workspace / "proposal.txt")
    return [
        (seam.START_INFO, (), seam.StartInfo),
        (seam.CALL_TOOL, ("nvim_info", {}, 1), seam.ToolReply),
        (seam.CALL_TOOL, ("no_such_tool", {}, 2), seam.ToolReply),
        (seam.CALL_TOOL, ("contract_later", {}, 3), seam.ToolReply),
        (seam.OPEN_REVIEW, (target, "early\n", 6, "contract", None, None, False), seam.OpenedReview),
        (seam.CONFIGURE_TOOLS, ({"max_file_bytes": 1 << 20, "workspace_roots": []},), None),
        (seam.OPEN_REVIEW, (target, "new text\n", 7, "contract", None, None, False), seam.OpenedReview),
        (seam.CLOSE_REVIEW, (target, 8), seam.ClosedReview),  # another proposal's id: not found
        (seam.CLOSE_REVIEW, (target, 7), seam.ClosedReview),
        (seam.CLOSE_REVIEW, (target, 7), seam.ClosedReview),  # closed already
    ]


def reply_shapes(answer: Any, workspace: Path) -> list[Any]:
    out = []
    for code, args, model in calls(workspace):
        reply = answer(code, *args)
        if model is not None:
            model.model_validate(reply if reply != [] else {})  # valid as seam.py reads it, no fallback
        if code == seam.START_INFO:  # the tool specs: nvim_info's, the one both sides have
            reply["tools"] = [t for t in reply["tools"] if t["name"] == "nvim_info"]
        if isinstance(reply, dict) and isinstance(reply.get("json"), str):
            reply["json"] = json.loads(reply["json"])
        out.append((code.split("bridge')")[1], shape(reply)))
    return out


def test_the_fake_answers_each_seam_call_in_the_shape_real_lua_does(make_nvim: Any, tmp_path: Path) -> None:
    settings = f"vim.g.gemini_companion = vim.json.decode([[{json.dumps(SETTINGS)}]])\n"
    # Neovim's environment that START_INFO passes on (bridge.lua's list), set on both sides.
    nvim: Neovim = make_nvim(init_lua=settings + LATER, env=ENVIRON)
    real = reply_shapes(nvim.lua, nvim.workspace)

    fake = FakeNeovim(tmp_path / "fake", config=SETTINGS)
    fake.environ.update(ENVIRON)
    fake.add_tool(FakeTool("contract_later", lambda _args, _done: None, "answers later", is_async=True))
    try:
        faked = reply_shapes(fake.exec_lua, fake.workspace)
        # The gateway's prompt probe: the fake's answer, also at its hit-enter prompt, has Neovim's shape.
        real_mode = shape(nvim.api.request("nvim_get_mode"))
        fake_modes = [shape(fake.request("nvim_get_mode"))]
        fake.prompt()
        fake_modes.append(shape(fake.request("nvim_get_mode")))
        fake.answer_prompt()
    finally:
        fake.close()
    assert faked == real
    assert fake_modes == [real_mode, real_mode]
