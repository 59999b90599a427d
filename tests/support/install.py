"""A plugin installed as a plugin manager installs it: a copy of the repository, its build run, a user's
Neovim."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from tests.support.helpers import ROOT, Neovim

NVIM = (ROOT / ".venv" / "xdg" / "nvim-path").read_text().strip()


OLD_NVIM = ROOT / ".venv" / "old-nvim" / "nvim"


# Debian's python3 carries the PEP 668 marker: `pip install` into it fails.
SYSTEM_PYTHON = Path("/usr/bin/python3")


def copy_plugin(dest: Path) -> Path:
    """A git clone of this checkout as it is now (tracked and new files), like a plugin manager's."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "clone"], cwd=dest, check=True)
    return dest


def run_build(plugin: Path, data: Path, env: dict[str, str] | None = None) -> tuple[str, float]:
    runner = data.parent / "build_runner.lua"
    runner.write_text(BUILD_RUNNER)
    t0 = time.monotonic()
    proc = subprocess.run(  # noqa: PLW1510 (a failing build is asserted on below)
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {runner}", "-c", "qa!"],
        env={
            **os.environ,
            "XDG_DATA_HOME": str(data),
            "BUILD_FILE": str(plugin / "build.lua"),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=300,
        cwd=data.parent,
    )
    out = proc.stdout + proc.stderr
    assert "ON_RTP=false" in out, out
    return out, time.monotonic() - t0


class Built(NamedTuple):
    plugin: Path  # the clone the build ran in
    data: Path  # XDG_DATA_HOME, holding the plugin's own environment
    out: str  # what the build printed
    seconds: float
    hijacked: Path  # written by whatever module of the hostile repository it ran in ran


def hostile_repository(where: Path) -> Path:
    """Make `where` a repository whose modules shadow what the install and the host import (the
    red-team's N3: `python -m venv`/`-m pip` put the working directory first on sys.path); each
    leaves a line in the marker file it returns."""
    marker = where / "HIJACKED"
    for module in ("venv", "pip", "ensurepip", "pynvim", "site", "sitecustomize", "encodings"):
        record = f"open({str(marker)!r}, 'a').write('{module} ' + repr(sys.argv) + '\\n')"
        (where / f"{module}.py").write_text(f"import sys\n{record}\nsys.exit(1)\n")
    (where / "pip").mkdir()
    (where / "pip" / "__main__.py").write_text((where / "pip.py").read_text())
    return marker


def user_nvim(
    make_nvim: Callable[..., Neovim],
    plugin: Path,
    data: Path,
    *,
    extra: str = "",
    name: str = "nvim",
    init: str | None = None,
) -> Neovim:
    config = data.parent / f"config-{name}"
    (config / "nvim").mkdir(parents=True, exist_ok=True)
    (config / "nvim" / "init.lua").write_text(init or USER_INIT.format(extra=extra))
    env = {"XDG_CONFIG_HOME": str(config), "XDG_DATA_HOME": str(data), "PLUGIN_DIR": str(plugin)}
    return make_nvim(name, nvim_cmd=[NVIM], env=env)


# What a plugin manager does with a build file: run it in a coroutine, before the plugin is on
# 'runtimepath' (lazy.nvim: `loadfile(dir .. '/build.lua')` inside its task), and show its error.
BUILD_RUNNER = """
local on_rtp = #vim.api.nvim_get_runtime_file('lua/gemini_companion/bridge.lua', false) > 0
local co = coroutine.create(assert(loadfile(vim.env.BUILD_FILE)))
local ok, err = coroutine.resume(co)
io.stdout:write(('ON_RTP=%s\\n'):format(on_rtp))
io.stdout:write(ok and 'BUILD OK\\n' or ('BUILD FAILED: ' .. tostring(err) .. '\\n'))
"""


# A user's init.lua once the plugin manager has put the plugin on 'runtimepath' (notify capture first).
USER_INIT = """
dofile(vim.env.GEMINI_COMPANION_DEV_INIT)
{extra}
vim.opt.runtimepath:prepend(vim.env.PLUGIN_DIR)
"""
