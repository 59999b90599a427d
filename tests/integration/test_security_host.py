"""A host that dies leaves no file pointing clients at its port (the red-team's N10): its port is free for
anyone to bind, and a client reading the discovery file or Claude's lock would hand its edits and context
to whoever does."""

from __future__ import annotations

import json
import os
import signal

from tests.support.claude_ide import lock_of
from tests.support.helpers import Neovim, wait_for


def test_a_killed_host_leaves_no_discovery_file_or_lock(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    lock, _ = lock_of(nvim)
    os.kill(disc.data["hostPid"], signal.SIGKILL)
    nvim.wait_state("failed")
    wait_for(lambda: not disc.path.exists() and not lock.exists(), what="both files removed")


def test_a_file_another_server_wrote_there_stays(nvim: Neovim) -> None:
    disc = nvim.wait_discovery()
    nvim.wait_state("running")
    lock, data = lock_of(nvim)
    # Another server now owns these names (say it bound the freed port): its files are not ours to remove.
    lock.write_text(json.dumps({**data, "hostPid": 1}))
    os.kill(disc.data["hostPid"], signal.SIGKILL)
    nvim.wait_state("failed")
    wait_for(lambda: not disc.path.exists(), what="the dead host's discovery file removed")
    assert lock.exists()
