"""Facts Lua must know before the Python host runs are copies of Python's: these fail when the
two drift (config.lua's defaults, Node's tmpdir rule, the log file's name)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any

import pytest
from gemini_companion.agents.gemini.discovery import node_tmpdir
from gemini_companion.base.logsetup import LOG_FILE_NAME
from gemini_companion.config import CompanionConfig

from tests.support.helpers import ROOT

NVIM = (ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip()  # as tests/lua/conftest.py

# Prints the Lua side of each fact as JSON, with the variables of argv[1] (JSON) set first.
FACTS = """
vim.opt.runtimepath:prepend(arg[2])
for name, value in pairs(vim.json.decode(arg[1])) do
  vim.env[name] = value ~= vim.NIL and value or nil
end
local status = require('gemini_companion.status')
io.stdout:write(vim.json.encode({
  defaults = require('gemini_companion.config').defaults,
  tmpdir = status.tmpdir(),
  log_file = status.log_file(),
  log_dir = vim.fn.stdpath('log'),
}))
"""


def lua_facts(env: dict[str, str | None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lua-facts-") as tmp:
        script = os.path.join(tmp, "facts.lua")
        with open(script, "w", encoding="utf-8") as f:
            f.write(FACTS)
        proc = subprocess.run(
            [str(NVIM), "--headless", "--clean", "--noplugin", "-l", script, json.dumps(env), str(ROOT)],
            check=True,
            cwd=tmp,
            env={**os.environ, "XDG_STATE_HOME": tmp},
            capture_output=True,
            text=True,
            timeout=60,
        )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_config_lua_defaults_are_config_py_defaults() -> None:
    defaults = lua_facts({})["defaults"]
    python = CompanionConfig().model_dump()

    def compare(lua: dict[str, Any], py: dict[str, Any], where: str) -> None:
        for key, value in lua.items():
            assert key in py, f"config.lua's default {where}{key} is no setting of config.py"
            if isinstance(value, dict):
                compare(value, py[key], f"{where}{key}.")
            else:
                assert value == py[key], f"{where}{key}: config.lua says {value!r}, config.py {py[key]!r}"

    assert defaults, "config.lua has no defaults"
    compare(defaults, python, "")


@pytest.mark.parametrize(
    "env",
    [
        {"TMPDIR": "/tmp/a/", "TMP": "/tmp/b", "TEMP": "/tmp/c"},
        {"TMPDIR": "", "TMP": "/tmp/b/", "TEMP": "/tmp/c"},
        {"TMPDIR": None, "TMP": None, "TEMP": "/tmp/c"},
        {"TMPDIR": None, "TMP": "", "TEMP": None},
        {"TMPDIR": "/", "TMP": None, "TEMP": None},
    ],
)
def test_status_lua_tmpdir_is_discovery_py_tmpdir(env: dict[str, str | None]) -> None:
    assert lua_facts(env)["tmpdir"] == node_tmpdir({k: v for k, v in env.items() if v is not None})


def test_status_lua_names_the_log_file_logsetup_writes() -> None:
    facts = lua_facts({})
    assert facts["log_file"] == os.path.join(facts["log_dir"], LOG_FILE_NAME)
