"""Which process runs the plugin's Python when `:UpdateRemotePlugins` registered it (the harness's
config: python3_host_prog and the manifest, no virtualenv of the plugin's own): a host process the
plugin starts itself, never Neovim's shared python3 host, which Neovim starts synchronously."""

from __future__ import annotations

import os

from tests.support.helpers import Neovim, wait_for


def test_the_manifest_path_runs_its_own_host_not_neovims_shared_one(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    assert nvim.lua("return require('gemini_companion.host').registered()")
    prog = os.path.realpath(nvim.lua("return vim.fn.exepath(vim.g.python3_host_prog)"))

    # What the user reads: the host is a process of the plugin's own, from python3_host_prog.
    report = nvim.health()
    assert "the running host is a process of its own, started by the plugin from" in report, report
    # Neovim never started its shared python3 host for us; the one host is the job we started.
    assert nvim.api.call("remote#host#IsRunning", "python3") == 0
    hosts = [c for c in nvim.api.api.list_chans() if c.get("client", {}).get("type") == "host"]
    assert [c["id"] for c in hosts] == [nvim.lua("return require('gemini_companion.state').channel")]
    assert os.path.realpath(hosts[0]["argv"][0]) == prog

    # Someone calls the manifest's function by hand: Neovim's shared host starts and loads the
    # plugin, which refuses to start a second server.
    nvim.api.call("GeminiCompanionCall", "start")
    expected = "gemini-companion: GeminiCompanionCall is internal: use :GeminiStart"
    wait_for(lambda: any(str(n[0]) == expected for n in nvim.notifications()), what="the refusal")
    assert nvim.api.call("remote#host#IsRunning", "python3") == 1
    assert nvim.discovery_files() == [disc.path]
    assert nvim.server_state()["state"] == "running"
