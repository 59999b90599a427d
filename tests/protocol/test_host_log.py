"""The host's log (gemini_companion.log), as the server writes it (moved from
tests/integration/test_connect.py, whose other tests show what Lua renders: status, :checkhealth)."""

from __future__ import annotations

from tests.support.fake_neovim import InProcessServer
from tests.support.helpers import wait_for


def test_every_log_line_names_its_neovim(server: InProcessServer) -> None:
    pid = server.fake.pid  # what Lua's START_INFO gives as vim.fn.getpid()
    wait_for(lambda: "listening on" in server.log_text(), what="the server logged")
    lines = server.log_text().splitlines()
    assert lines and all(f" [nvim {pid}] " in line for line in lines if line[:2] == "20"), lines[:5]
