"""First install, as a plugin manager performs it: the plugin cloned to a directory that is not on
'runtimepath', its build step (build.lua) run in a fresh Neovim, then a normal start. Plus lazy-loading,
a PEP 668 Python, a too-old Neovim, and every broken-Python case giving one short, true message."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pynvim
import pytest

from tests.support.helpers import ROOT, Neovim, record_figure, wait_for
from tests.support.install import (
    OLD_NVIM,
    SYSTEM_PYTHON,
    Built,
    run_build,
    user_nvim,
)

pytestmark = pytest.mark.slow

# A test on the shared build (conftest.py) may be the one that runs it, or wait for it: on a loaded
# machine that takes longer than the suite's per-test bound (run_build's own bound is 300 s).
BUILD_TIME = pytest.mark.timeout(300)

# lazy.nvim's `event = 'VeryLazy'`: load the plugin (rtp + plugin/ files) after VimEnter.
VERY_LAZY = """
vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function()
  vim.schedule(function()
    vim.opt.runtimepath:prepend(vim.env.PLUGIN_DIR)
    vim.cmd('runtime! plugin/gemini_companion.lua')
  end)
end })
"""


def git_status(plugin: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=plugin, capture_output=True, text=True, check=True
    ).stdout


def messages(nvim: Neovim) -> list[str]:
    return [str(n[0]) for n in nvim.notifications()]


@BUILD_TIME
def test_a_plugin_managers_build_then_one_normal_start_serves(
    built: Built, make_nvim: Callable[..., Neovim]
) -> None:
    plugin_dir, data, out = built.plugin, built.data, built.out
    assert "BUILD OK" in out and "installed into" in out, out
    venv = data / "nvim" / "gemini_companion" / "venv"
    # The PEP 668 case: the system Python refuses pip, the build made its own virtualenv from it.
    marker = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (Path(marker) / "EXTERNALLY-MANAGED").exists(), "the test needs a PEP 668 system python3"
    pyvenv = (venv / "pyvenv.cfg").read_text()
    assert f"home = {SYSTEM_PYTHON.parent}" in pyvenv, pyvenv
    # No litter in the checkout: nothing untracked, nothing ignored (no build/, no egg-info).
    assert git_status(plugin_dir) == ""

    nvim = user_nvim(make_nvim, plugin_dir, data)
    disc = nvim.wait_discovery(timeout=30)
    record_figure("install.first_start_to_discovery_s", value=round(time.monotonic() - nvim.started_at, 2))
    nvim.wait_state("running")
    assert nvim.lua("return require('gemini_companion.host').process.python") == str(venv / "bin" / "python")
    # The host runs from the plugin's own environment and loads this clone's Python code.
    cmdline = Path(f"/proc/{disc.data['hostPid']}/cmdline").read_bytes().split(b"\0")
    assert cmdline[0].decode() == str(venv / "bin" / "python")
    assert cmdline[3].decode() == str(plugin_dir / "rplugin" / "python3" / "gemini_companion")
    notes = nvim.notifications()
    assert all(level < 4 for _, level in notes), notes  # no errors
    assert not any("UpdateRemotePlugins" in m or "restart" in m.lower() for m in messages(nvim))
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ● 0"

    nvim.api.command("checkhealth gemini_companion")
    health = "\n".join(nvim.api.current.buffer[:])
    assert "ERROR" not in health, health
    assert "the plugin's Python environment" in health and "gemini_companion import" in health
    # Only the bytecode a user's Python writes beside the modules it ran (ignored by git, so a
    # plugin manager's update sees no local change).
    assert all(line.endswith("/__pycache__/") for line in git_status(plugin_dir).splitlines())


@BUILD_TIME
@pytest.mark.parametrize("trigger", ["VeryLazy", "cmd"])
def test_lazy_loaded_after_vimenter_still_starts_by_itself(
    trigger: str, built: Built, make_nvim: Callable[..., Neovim]
) -> None:
    plugin_dir, data = built.plugin, built.data
    # `cmd = { 'GeminiStatus' }`: nothing at startup; loaded on first use of the command.
    init = "dofile(vim.env.GEMINI_COMPANION_DEV_INIT)\n" + (VERY_LAZY if trigger == "VeryLazy" else "")
    nvim = user_nvim(make_nvim, plugin_dir, data, init=init, name=trigger)
    if trigger == "cmd":
        wait_for(lambda: nvim.api.eval("v:vim_did_enter") == 1, what="VimEnter")
        nvim.lua(
            "vim.opt.runtimepath:prepend(vim.env.PLUGIN_DIR)\n"
            "vim.cmd('runtime! plugin/gemini_companion.lua')\n"
            "vim.cmd('GeminiStatus')"
        )
    nvim.wait_discovery(timeout=30)
    nvim.wait_state("running")


def test_a_failed_build_fails_loudly_and_leaves_nothing(
    plugin_dir: Path, tmp_path: Path, make_nvim: Callable[..., Neovim]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # pip cannot reach any package (as offline): the build must raise with pip's own last lines.
    out, _ = run_build(plugin_dir, data, {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"})
    assert "BUILD OK" not in out, out
    failed = out[out.index("BUILD FAILED: ") :]
    assert "pip install -r requirements.txt failed" in failed
    assert "No matching distribution found for pynvim" in failed, failed
    assert not (data / "nvim" / "gemini_companion" / "venv").exists()  # nothing half-made
    assert git_status(plugin_dir) == ""

    nvim = user_nvim(make_nvim, plugin_dir, data)
    wait_for(lambda: messages(nvim), what="a message")
    assert messages(nvim) == ["gemini-companion: not installed: run :GeminiInstall"]
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini not installed"
    status = "\n".join(nvim.lua("return require('gemini_companion.status').lines()"))
    assert "not installed" in status and ":GeminiInstall" in status


def test_not_installed_then_the_advised_command_starts_the_server(
    plugin_dir: Path, tmp_path: Path, make_nvim: Callable[..., Neovim]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    nvim = user_nvim(make_nvim, plugin_dir, data)
    wait_for(lambda: messages(nvim), what="a message")
    assert messages(nvim) == ["gemini-companion: not installed: run :GeminiInstall"]
    nvim.api.command("checkhealth gemini_companion")
    health = "\n".join(nvim.api.current.buffer[:])
    assert "not installed" in health and "run :GeminiInstall" in health
    nvim.api.command("bwipeout!")
    nvim.api.command("GeminiInstall")  # synchronous; no restart afterwards
    nvim.wait_discovery(timeout=30)
    nvim.wait_state("running")
    assert any("installed into" in m for m in messages(nvim))


def test_a_broken_own_environment_names_the_next_step(
    plugin_dir: Path, tmp_path: Path, make_nvim: Callable[..., Neovim]
) -> None:
    data = tmp_path / "data"
    venv = data / "nvim" / "gemini_companion" / "venv"
    # A virtualenv without any of the packages (e.g. emptied by hand): the host could not run.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    nvim = user_nvim(make_nvim, plugin_dir, data)
    wait_for(lambda: messages(nvim), what="a message")
    [message] = messages(nvim)
    assert message == "gemini-companion: environment lacks pynvim: run :GeminiInstall"
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ✗"
    status = "\n".join(nvim.lua("return require('gemini_companion.status').lines()"))
    assert "failed" in status and "lacks pynvim, msgpack" in status


def host_processes(nvim: Neovim) -> list[str]:
    """Neovim's children running a plugin host (host.lua's `pynvim.start_host()`)."""
    assert nvim.proc is not None
    found = []
    for children in Path(f"/proc/{nvim.proc.pid}/task").glob("*/children"):
        for pid in children.read_text().split():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
                if "start_host" in argv:
                    found.append(argv.replace("\0", " "))
    return found


def test_an_environment_that_runs_the_host_but_lacks_a_package_stops_it(
    plugin_dir: Path, tmp_path: Path, make_nvim: Callable[..., Neovim]
) -> None:
    """The host starts while its Python is checked; when the check fails, that host (here alive:
    its pynvim is there) is stopped, and the user reads only what is missing."""
    data = tmp_path / "data"
    venv = data / "nvim" / "gemini_companion" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    only_pynvim = tmp_path / "only-pynvim"
    only_pynvim.mkdir()
    site = Path(pynvim.__file__).parent.parent
    for name in ("pynvim", "msgpack", "greenlet", "typing_extensions"):
        for found in site.glob(f"{name}*"):
            (only_pynvim / found.name).symlink_to(found)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "only_pynvim.pth").write_text(f"{only_pynvim}\n")
    nvim = user_nvim(make_nvim, plugin_dir, data)
    wait_for(lambda: messages(nvim), what="a message")
    assert messages(nvim) == ["gemini-companion: environment lacks aiohttp: run :GeminiInstall"]
    wait_for(lambda: not host_processes(nvim), what="the host started beside the check stopped")
    time.sleep(0.3)  # its exit is not a second message
    assert messages(nvim) == ["gemini-companion: environment lacks aiohttp: run :GeminiInstall"]
    assert nvim.lua("return require('gemini_companion').statusline()") == "Gemini ✗"


def with_screen(argv: list[str], env: dict[str, str]) -> pynvim.Nvim:
    """Neovim with an 80x24 UI attached before startup (--embed waits for it), so a startup
    message that would stop at a hit-enter prompt really does."""
    nvim = pynvim.attach("child", argv=["env", *(f"{k}={v}" for k, v in env.items()), *argv, "--embed"])
    nvim.api.ui_attach(80, 24, {"rgb": True})
    return nvim


def shown(nvim: pynvim.Nvim) -> list[str]:
    return [line for line in nvim.command_output("messages").splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("prog", "expected"),
    [
        ("/nonexistent/python3", "gemini-companion: python3_host_prog not found: run :GeminiInstall"),
        (str(SYSTEM_PYTHON), "gemini-companion: python3_host_prog lacks pynvim: run :GeminiInstall"),
    ],
)
def test_unusable_python3_host_prog_gives_one_short_message(prog: str, expected: str, tmp_path: Path) -> None:
    # The documented :UpdateRemotePlugins path (the dev config has run it) with a bad Python 3 provider.
    init = tmp_path / "init.lua"
    init.write_text(f"vim.g.python3_host_prog = {json.dumps(prog)}\n")
    env = {"GEMINI_COMPANION_DEV_INIT": str(init), "XDG_STATE_HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    nvim = with_screen([str(ROOT / "dev" / "nvim")], env)
    try:
        wait_for(lambda: shown(nvim), what="a message")
        assert shown(nvim) == [expected]
        assert nvim.api.get_mode()["blocking"] is False  # no hit-enter prompt
        assert nvim.exec_lua("return require('gemini_companion').statusline()") == "Gemini ✗"
        status = "\n".join(nvim.exec_lua("return require('gemini_companion.status').lines()"))
        assert prog in status and ":GeminiInstall" in status
        nvim.command("GeminiStart", async_=True)  # an explicit command says it again, and nothing else
        wait_for(lambda: len(shown(nvim)) == 2, what="the message again")
        assert shown(nvim) == [expected, expected]
    finally:
        nvim.command("qa!", async_=True)
        nvim.close()


def test_too_old_neovim_says_so_once_without_a_prompt(plugin_dir: Path, tmp_path: Path) -> None:
    assert OLD_NVIM.exists(), "run `make test`: dev/bootstrap.sh --dev fetches the distribution's old neovim"
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.runtimepath:prepend({json.dumps(str(plugin_dir))})\n")
    env = {f"XDG_{d}_HOME": str(tmp_path / d.lower()) for d in ("CONFIG", "DATA", "STATE", "CACHE")}
    nvim = with_screen([str(OLD_NVIM), "-u", str(init), "-i", "NONE"], env)
    try:
        assert nvim.api.get_api_info()[1]["version"]["minor"] < 10
        wait_for(lambda: shown(nvim), what="the message")
        assert shown(nvim) == ["gemini-companion needs Neovim >= 0.10 (this is 0.7.2)"]
        assert nvim.api.get_mode()["blocking"] is False  # no hit-enter prompt
        assert nvim.funcs.exists(":GeminiStart") == 0
        nvim.command("checkhealth gemini_companion")
        health = "\n".join(nvim.current.buffer[:])
        assert "Neovim 0.10 or newer is required; this is 0.7.2" in health, health
        assert "stack traceback" not in health and "E5108" not in health
    finally:
        nvim.command("qa!", async_=True)
        nvim.close()
